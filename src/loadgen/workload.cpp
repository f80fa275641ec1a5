// workload: see workload.h
