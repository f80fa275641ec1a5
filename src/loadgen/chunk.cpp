// chunk: see chunk.h
