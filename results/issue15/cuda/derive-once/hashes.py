import hashlib, sys
from liftkit.blas.codelets import Kind, space, derive, CodeletError
from liftkit.codegen.compiler import compile_program
from liftkit.codegen.kernel import CompileOptions
out = []
kinds = [(Kind('mm',dt,lay), dev, be) for dt in ('float32','float64','complex64') for lay in ('NN','NT','TN')
         for dev, be in (('gpu','cuda'), ('cpu','opencl'))]
kinds += [(Kind('gemv',dt,lay), dev, be) for dt in ('float32','float64') for lay in 'NT' for dev, be in (('gpu','cuda'),('cpu','opencl'))]
kinds += [(Kind('transpose','float32'), 'gpu','cuda'), (Kind('transpose','float64'),'cpu','opencl'), (Kind('dot','float32'),'gpu','cuda'), (Kind('scal','float64'),'cpu','opencl')]
for k, dev, be in kinds:
    for v in space(k, dev, be):
        if v.codelet in ('real', 'nn'): continue
        try:
            d = derive(k, v)
            c = compile_program(d.final, CompileOptions(dialect='cuda' if be == 'cuda' else 'opencl'))
            h = hashlib.sha256("".join(kk.source for kk in c.kernels).encode()).hexdigest()[:16]
            steps = ";".join(str(s.choice) for s in d.steps)
            h2 = hashlib.sha256(steps.encode()).hexdigest()[:12]
        except CodeletError as e:
            h, h2 = "error", str(e)[:60]
        out.append(f"{k} {dev} {be} {v} {h} {h2}")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
print(len(out))
