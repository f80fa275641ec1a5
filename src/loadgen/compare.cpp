// compare: see compare.h
