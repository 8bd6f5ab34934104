"""A kernel UDF's declaration: its SQL name, its ``kanon._core`` function, its signature.

The parameters are named, in the order of the compiled function's own (a test compares
them); the generated SQL names every argument (:meth:`Kernel.call`), and the UDF hands
them to the kernel by name, so no caller keeps a position in step.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Kernel"]


@dataclass(frozen=True)
class Kernel:
    """A kernel UDF: ``name`` in SQL, ``function`` of ``kanon._core``, typed parameters."""

    name: str
    function: str
    #: ``(name, SQL type)`` of every parameter, in the compiled function's order.
    parameters: tuple[tuple[str, str], ...]
    returns: str

    def call(self, **args: str) -> str:
        """The SQL call of this kernel: each argument (an SQL expression) cast to its type.

        Raises:
            TypeError: an argument missing or not a parameter (a planner's mistake).
        """
        names = [name for name, _ in self.parameters]
        if set(args) != set(names):
            missing, extra = set(names) - set(args), set(args) - set(names)
            msg = f"{self.name}: missing {sorted(missing)}, unknown {sorted(extra)}"
            raise TypeError(msg)
        cast = ", ".join(f"CAST({args[name]} AS {sql})" for name, sql in self.parameters)
        return f"{self.name}({cast})"
