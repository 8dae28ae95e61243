super.a
