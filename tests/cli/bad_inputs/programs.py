"""Well-formed Python whose Lift programs are wrong, one mistake each (tests/cli/test_bad_inputs.py)."""

from liftkit.dsl import *

N = size("N")
M = size("M")

# zip of arrays of different lengths
zip_lengths = fun([float32[N], float32[M]], lambda x, y: map(add) << zip(x, y))
# a binary user function mapped over plain floats
arity = fun([float32[N]], lambda x: map(add) << x)
# join of an array that is not nested
flat_join = fun([float32[N]], lambda x: join << x)
# a scalar user function mapped over pairs
neg_pairs = fun([float32[N], float32[N]], lambda x, y: map(neg) << zip(x, y))
# get of a component the tuple does not have
bad_get = fun([float32[N], float32[N]], lambda x, y: map(lambda p: get(2) << p) << zip(x, y))
# splitting by zero
split_zero = fun([float32[N]], lambda x: join << split(0) << x)
# iterate whose body changes the type (an array becomes an array of arrays)
iterate_nests = fun([float32[N]], lambda x: iterate(2, split(2)) << x)
# fine, but not a program
not_a_program = 42
# fine programs, for bad inputs
halves = fun([float32[N]], lambda x: join << map(map(neg)) << split(2) << x)
dot = fun([float32[N], float32[N]], lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))
pairs = fun([ArrayType(tuple_of(float32, float32), N)], lambda x: map(add) << x)
ints = fun([int32[N]], lambda x: map(INT.neg) << x)
# user functions whose Python twin or OpenCL C body is wrong
broken_impl = user_fun("broken_impl", [("x", float32)], float32, "return x;", lambda x: x.no_such)
python_fails = fun([float32[N]], lambda x: map(broken_impl) << x)
broken_c = user_fun("broken_c", [("x", float32)], float32, "return x +;", lambda x: x)
c_fails = fun([float32[N]], lambda x: mapGlb(broken_c) << x)
