// histogram: see histogram.h
