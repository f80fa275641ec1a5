// pricing: see pricing.h
