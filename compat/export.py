"""torch.export: tidal.fx.export under torch's name (export(), ExportedProgram, the graph signature's classes,
default_decompositions)."""
from ..fx.export import *  # noqa: F401,F403
from ..fx.export import __all__  # noqa: F401
from ..fx.graph_signature import (ConstantArgument, InputKind, InputSpec, OutputKind, OutputSpec,  # noqa: F401
                                  TensorArgument)
from ..fx import graph_signature  # noqa: F401 - torch.export.graph_signature
