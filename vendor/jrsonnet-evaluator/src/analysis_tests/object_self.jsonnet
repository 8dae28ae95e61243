{ a: 1, b: self.a }
