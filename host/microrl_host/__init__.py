"""Host side of microrl: fast training, export, deploy and benchmarks."""
