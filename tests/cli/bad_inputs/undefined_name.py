from liftkit.dsl import *

N = size("N")
prog = fun([float32[N]], lambda x: mapp(neg) << x)  # a typo: mapp
