local f(x, y) = x + y; f(1, 2)
