"""Every built-in pattern, each with its type rule and semantics in one class."""

from liftkit.ir.patterns.base import (
    BOUNDARY_KINDS,
    Boundary,
    IndexFun,
    Kind,
    Pattern,
    PatternError,
    index_fun,
)
from liftkit.ir.patterns.cuda import (
    CUDA_PATTERNS, CudaPattern, ReduceMma, ReduceMmaBF16, ReduceMmaF64, ReduceMmaF64K8,
    ReduceMmaTF32, ReduceWarp,
    ReduceWgmma, ReduceWgmmaAsync, ReduceWgmmaAsyncTF32, ReduceWgmmaAsyncTF32Z, ReduceWgmmaPair,
    ReduceWgmmaPairTF32, ReduceWgmmaPairTF32Z, ReduceWgmmaTF32, ReduceWgmmaTF32Z, ReduceWgmmaTma,
    ReduceWgmmaTmaPair, ReduceWgmmaTmaPairTF32Z, ReduceWgmmaTmaTF32Z, ToLocalAsync,
)
from liftkit.ir.patterns.layout import (
    LAYOUT_PATTERNS,
    AsScalar,
    AsVector,
    At,
    Crop,
    Gather,
    Get,
    Id,
    Join,
    Pad,
    Reorder,
    ReorderStride,
    Scatter,
    Slide,
    Streamed,
    Split,
    Transpose,
    Tuple,
    Unzip,
    Zip,
)
from liftkit.ir.patterns.maps import (
    MAP_PATTERNS,
    AbstractMap,
    Map,
    MapGlb,
    MapLcl,
    MapSeq,
    MapSeqUnroll,
    MapVec,
    MapWrg,
    ParallelMap,
)
from liftkit.ir.patterns.memory import MEMORY_PATTERNS, AddressSpaceWrapper, ToGlobal, ToLocal, ToPrivate
from liftkit.ir.patterns.reductions import (
    REDUCE_PATTERNS,
    AbstractReduce,
    Iterate,
    PartRed,
    Reduce,
    ReduceSeq,
    ReduceSeqUnroll,
)
from liftkit.ir.patterns.wrg import WRG_PATTERNS, LastWrg, WrgItems

ALL_PATTERNS: tuple[type[Pattern], ...] = (MAP_PATTERNS + REDUCE_PATTERNS + LAYOUT_PATTERNS + MEMORY_PATTERNS
                                           + WRG_PATTERNS + CUDA_PATTERNS)
PATTERNS_BY_NAME: dict[str, type[Pattern]] = {p.name: p for p in ALL_PATTERNS}

__all__ = [
    "ALL_PATTERNS", "PATTERNS_BY_NAME", "BOUNDARY_KINDS", "Boundary", "IndexFun", "Kind", "Pattern",
    "PatternError", "index_fun", "AsScalar", "AsVector", "At", "Crop", "Gather", "Get", "Id", "Join", "Pad",
    "Reorder", "ReorderStride", "Scatter", "Slide", "Split", "Streamed", "Transpose", "Tuple", "Unzip", "Zip",
    "AbstractMap", "Map", "MapGlb", "MapLcl", "MapSeq", "MapSeqUnroll", "MapVec", "MapWrg",
    "ParallelMap", "LastWrg", "WrgItems", "AddressSpaceWrapper", "ToGlobal", "ToLocal", "ToPrivate", "AbstractReduce",
    "Iterate", "PartRed", "Reduce", "ReduceSeq", "ReduceSeqUnroll", "CudaPattern", "ReduceWarp",
    "ReduceMma", "ReduceMmaTF32", "ReduceMmaBF16", "ReduceMmaF64", "ReduceMmaF64K8", "ReduceWgmma",
    "ReduceWgmmaTF32",
    "ReduceWgmmaTF32Z", "ReduceWgmmaAsync", "ReduceWgmmaAsyncTF32", "ReduceWgmmaAsyncTF32Z",
    "ReduceWgmmaPair", "ReduceWgmmaPairTF32", "ReduceWgmmaPairTF32Z", "ReduceWgmmaTma",
    "ReduceWgmmaTmaPair", "ReduceWgmmaTmaPairTF32Z", "ReduceWgmmaTmaTF32Z", "ToLocalAsync",
]
