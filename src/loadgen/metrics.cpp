// metrics: see metrics.h
