// placeholder: removed once solvers/ has sources
