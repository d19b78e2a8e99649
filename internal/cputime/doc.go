// Package cputime measures the CPU time of the process, for benchmarks that
// report cpu-ns/op next to wall-clock time: on a shared machine the wall
// clock measures the neighbours too, CPU time much less so.
package cputime
