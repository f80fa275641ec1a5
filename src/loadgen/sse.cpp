// sse: see sse.h
