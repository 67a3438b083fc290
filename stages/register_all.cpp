// Placeholder until graph/registry.h lands; replaced in the foundation commit.
