[ i < j for i in std.range(1, 1000) for j in std.range(1, 1000)]
