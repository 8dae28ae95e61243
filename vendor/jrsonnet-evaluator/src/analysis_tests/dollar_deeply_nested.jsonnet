{
  top: 'outer',
  a: {
    b: {
      c: $.top,
      d: self,
    },
  },
}
