from liftkit.dsl import *

N = size("N")
prog = fun([float32[N]], lambda x: map(neg) << x  # the parenthesis is never closed
