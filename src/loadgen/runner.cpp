// runner: see runner.h
