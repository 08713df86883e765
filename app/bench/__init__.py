"""Benchmarks behind `cortex bench`: each prints numbers, none is a timed unit test."""
