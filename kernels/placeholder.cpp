// placeholder: removed once kernels/ has sources
