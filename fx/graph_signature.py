"""torch.export.graph_signature: what each input and output of an exported graph is (a parameter, a buffer, a lifted
constant, a user input; a user output, a buffer mutation), and the views torch derives from the specs."""
from __future__ import annotations

import dataclasses
from enum import Enum, auto
from typing import Any

__all__ = ["ConstantArgument", "CustomObjArgument", "ExportBackwardSignature", "ExportGraphSignature", "InputKind",
           "InputSpec", "OutputKind", "OutputSpec", "SymIntArgument", "SymFloatArgument", "SymBoolArgument",
           "TensorArgument"]


@dataclasses.dataclass
class TensorArgument:
    """A tensor input or output, by its node's name."""
    name: str


@dataclasses.dataclass
class SymIntArgument:
    """A symbolic int, by its node's name."""
    name: str


@dataclasses.dataclass
class SymFloatArgument:
    """A symbolic float, by its node's name."""
    name: str


@dataclasses.dataclass
class SymBoolArgument:
    """A symbolic bool, by its node's name."""
    name: str


@dataclasses.dataclass
class ConstantArgument:
    """A non-tensor input or output, fixed to its example value."""
    name: str
    value: Any


@dataclasses.dataclass
class CustomObjArgument:
    """A script object (tidal has none; kept for the name)."""
    name: str
    class_fqn: str
    fake_val: Any = None


class InputKind(Enum):
    """What a graph input is."""
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()
    CUSTOM_OBJ = auto()
    TOKEN = auto()


class OutputKind(Enum):
    """What a graph output is."""
    USER_OUTPUT = auto()
    LOSS_OUTPUT = auto()
    BUFFER_MUTATION = auto()
    PARAMETER_MUTATION = auto()
    GRADIENT_TO_PARAMETER = auto()
    GRADIENT_TO_USER_INPUT = auto()
    USER_INPUT_MUTATION = auto()
    TOKEN = auto()


@dataclasses.dataclass
class InputSpec:
    """One graph input: its kind, its argument (node name), the state it stands for (target)."""
    kind: InputKind
    arg: Any
    target: str | None
    persistent: bool | None = None

    def __post_init__(self) -> None:
        if self.kind is InputKind.BUFFER and self.persistent is None:
            raise AssertionError("Failed to specify persistent flag on BUFFER.")

    def __str__(self) -> str:
        target = "" if self.target is None else f" target='{self.target}'"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclasses.dataclass
class OutputSpec:
    """One graph output: its kind, its argument, the state it updates (target)."""
    kind: OutputKind
    arg: Any
    target: str | None

    def __str__(self) -> str:
        target = "" if self.target is None else f" target='{self.target}'"
        return f"{self.arg.name}: {self.kind.name}{target}"


@dataclasses.dataclass
class ExportBackwardSignature:
    """The gradients a joint graph outputs (tidal exports no joint graphs)."""
    gradients_to_parameters: dict
    gradients_to_user_inputs: dict
    loss_output: str


def _name_or_value(arg) -> Any:
    return arg.value if isinstance(arg, ConstantArgument) else arg.name


@dataclasses.dataclass
class ExportGraphSignature:
    """The specs of an exported graph's inputs (parameters, buffers, constants, then user inputs) and outputs
    (buffer mutations, then user outputs)."""
    input_specs: list
    output_specs: list

    def _targets(self, kind: InputKind) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind is kind)

    @property
    def parameters(self) -> tuple:
        """The parameters' names in the module (fc.weight)."""
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple:
        """The buffers' names in the module."""
        return self._targets(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self) -> tuple:
        """The names of the buffers left out of the state dict."""
        return tuple(s.target for s in self.input_specs if s.kind is InputKind.BUFFER and s.persistent is False)

    @property
    def lifted_tensor_constants(self) -> tuple:
        """The names of the tensor attributes lifted to inputs."""
        return self._targets(InputKind.CONSTANT_TENSOR)

    @property
    def lifted_custom_objs(self) -> tuple:
        """None in tidal."""
        return self._targets(InputKind.CUSTOM_OBJ)

    @property
    def user_inputs(self) -> tuple:
        """The user inputs' node names (constants: their values)."""
        return tuple(_name_or_value(s.arg) for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple:
        """The user outputs' node names (constants: their values)."""
        return tuple(_name_or_value(s.arg) for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)

    def _inputs_to(self, kind: InputKind) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind is kind}

    @property
    def inputs_to_parameters(self) -> dict:
        """Placeholder name -> parameter name."""
        return self._inputs_to(InputKind.PARAMETER)

    @property
    def inputs_to_buffers(self) -> dict:
        """Placeholder name -> buffer name."""
        return self._inputs_to(InputKind.BUFFER)

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict:
        """Placeholder name -> tensor attribute name."""
        return self._inputs_to(InputKind.CONSTANT_TENSOR)

    @property
    def inputs_to_lifted_custom_objs(self) -> dict:
        """None in tidal."""
        return self._inputs_to(InputKind.CUSTOM_OBJ)

    def _outputs_to(self, kind: OutputKind) -> dict:
        return {s.arg.name: s.target for s in self.output_specs if s.kind is kind}

    @property
    def buffers_to_mutate(self) -> dict:
        """Output name -> the buffer it is the new value of."""
        return self._outputs_to(OutputKind.BUFFER_MUTATION)

    @property
    def parameters_to_mutate(self) -> dict:
        """Output name -> the parameter it is the new value of."""
        return self._outputs_to(OutputKind.PARAMETER_MUTATION)

    @property
    def user_inputs_to_mutate(self) -> dict:
        """Output name -> the user input it is the new value of."""
        return self._outputs_to(OutputKind.USER_INPUT_MUTATION)

    @property
    def backward_signature(self) -> None:
        """None: no joint graph."""
        return None

    @property
    def assertion_dep_token(self) -> None:
        """None: no runtime assertions."""
        return None

    @property
    def input_tokens(self) -> list:
        """No effect tokens."""
        return []

    @property
    def output_tokens(self) -> list:
        """No effect tokens."""
        return []

    def replace_all_uses(self, old: str, new: str) -> None:
        """Rename argument `old` to `new` in every spec."""
        for spec in (*self.input_specs, *self.output_specs):
            if getattr(spec.arg, "name", None) == old:
                spec.arg.name = new

    def __str__(self) -> str:
        inputs = "\n".join(str(s) for s in self.input_specs)
        outputs = "\n".join(str(s) for s in self.output_specs)
        return f"\n# inputs\n{inputs}\n\n# outputs\n{outputs}\n"
