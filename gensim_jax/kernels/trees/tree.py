"""Labelled ordered trees: the input of the tree kernels (:mod:`gensim_jax.kernels.trees`).

:class:`Tree` is an immutable ``(label, children)`` node; a node without children is a *leaf* (a
terminal symbol of a grammar), every other node has a *production* ``label -> child labels``, the
unit the ST and SST kernels match (Moschitti 2006 Sec. 2). Trees read and print a bracket notation,
``(S (A a) b)``, with labels that hold spaces or brackets in double quotes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

__all__ = ["Tree"]


class Tree:
    """An immutable labelled ordered tree: a ``label`` and a tuple of ``children``.

    Leaves (no children) are terminal symbols; any other node has the production
    ``label -> child labels``. Trees hash and compare structurally (label and ordered children);
    the hash is computed once at construction, so trees can key dictionaries cheaply. Deep trees
    are fine: nothing here recurses in Python.

    Args:
      label: non-empty string.
      children: iterable of :class:`Tree`.

    Example:
      >>> t = Tree("S", [Tree("A", [Tree("a")]), Tree("b")])
      >>> t.production
      "S -> A 'b'"
      >>> str(t)
      '(S (A a) b)'
      >>> Tree.from_bracket("(S (A a) b)") == t
      True
    """

    __slots__ = ("label", "children", "_hash", "_n_nodes", "_height")

    label: str
    children: tuple[Tree, ...]

    def __init__(self, label: str, children: Sequence[Tree] | Iterator[Tree] = ()):
        if not isinstance(label, str):
            raise TypeError(f"Tree label must be a str, got {type(label).__name__}")
        if not label:
            raise ValueError("Tree label must be a non-empty string")
        kids = tuple(children)
        for i, c in enumerate(kids):
            if not isinstance(c, Tree):
                raise TypeError(f"Tree children must be Tree instances; child {i} of {label!r} is {type(c).__name__}")
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "children", kids)
        object.__setattr__(self, "_hash", hash((label, tuple(c._hash for c in kids))))
        object.__setattr__(self, "_n_nodes", 1 + sum(c._n_nodes for c in kids))
        object.__setattr__(self, "_height", 1 + max(c._height for c in kids) if kids else 0)

    def __setattr__(self, name, value):
        raise AttributeError("Tree is immutable")

    def __delattr__(self, name):
        raise AttributeError("Tree is immutable")

    def __reduce__(self):
        return (Tree, (self.label, self.children))

    # -- structure ------------------------------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        """True when the node has no children (a terminal symbol)."""
        return not self.children

    @property
    def n_nodes(self) -> int:
        """Number of nodes, leaves included."""
        return self._n_nodes

    @property
    def height(self) -> int:
        """Length of the longest root-to-leaf path in edges (0 for a leaf)."""
        return self._height

    @property
    def production(self) -> str | None:
        """The production ``"label -> c1 c2 ..."`` (leaf children quoted), or None for a leaf."""
        if not self.children:
            return None
        parts = [repr(c.label) if c.is_leaf else c.label for c in self.children]
        return f"{self.label} -> {' '.join(parts)}"

    def productions(self) -> list[str]:
        """Productions of all non-leaf nodes in post-order (children before parents)."""
        return [n.production for n in self.postorder() if n.children]  # type: ignore[misc]

    def postorder(self) -> list[Tree]:
        """All nodes (one entry per position) in post-order, computed without recursion."""
        out: list[Tree] = []
        stack: list[tuple[Tree, int]] = [(self, 0)]
        while stack:
            node, k = stack[-1]
            if k < len(node.children):
                stack[-1] = (node, k + 1)
                stack.append((node.children[k], 0))
            else:
                stack.pop()
                out.append(node)
        return out

    # -- equality and display ---------------------------------------------------------------
    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a is b:
                continue
            if (
                a._hash != b._hash
                or a.label != b.label
                or len(a.children) != len(b.children)
                or a._n_nodes != b._n_nodes
            ):
                return False
            stack.extend(zip(a.children, b.children))
        return True

    def __repr__(self) -> str:
        return f"Tree.from_bracket({self.to_bracket()!r})"

    def __str__(self) -> str:
        return self.to_bracket()

    def to_bracket(self) -> str:
        """Bracket notation ``(label child ...)``; leaves are bare, labels that contain space,
        quotes or parentheses are written in double quotes (with backslash escapes)."""
        parts: list[str] = []
        stack: list[tuple[Tree, int]] = [(self, 0)]
        while stack:
            node, k = stack.pop()
            if not node.children:
                parts.append(_quote_label(node.label))
                continue
            if k == 0:
                parts.append("(" + _quote_label(node.label))
            if k < len(node.children):
                stack.append((node, k + 1))
                stack.append((node.children[k], 0))
            else:
                parts.append(")")
        out = []
        for p in parts:
            if p == ")":
                out.append(p)
            elif out and not out[-1].endswith("("):
                out.append(" " + p)
            else:
                out.append(p)
        return "".join(out)

    @classmethod
    def from_bracket(cls, text: str) -> Tree:
        """Parse bracket notation, e.g. ``"(S (NP a) (VP b c))"``; a bare token is a leaf.

        Labels may be double-quoted (``"("`` for a literal parenthesis). Raises ValueError with
        the character offset on malformed input.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokens = _bracket_tokens(text)
        if not tokens:
            raise ValueError("empty bracket string")
        # stack of (label, children) for open nodes
        stack: list[tuple[str, list[Tree]]] = []
        result: Tree | None = None
        i = 0
        while i < len(tokens):
            kind, val, pos = tokens[i]
            if result is not None:
                raise ValueError(f"unexpected text after the tree at offset {pos}")
            if kind == "(":
                if i + 1 >= len(tokens) or tokens[i + 1][0] != "label":
                    raise ValueError(f"expected a label after '(' at offset {pos}")
                stack.append((tokens[i + 1][1], []))
                i += 2
                continue
            if kind == ")":
                if not stack:
                    raise ValueError(f"unbalanced ')' at offset {pos}")
                lab, kids = stack.pop()
                node = cls(lab, kids)
            else:
                node = cls(val)
            if stack:
                stack[-1][1].append(node)
            else:
                result = node
            i += 1
        if stack or result is None:
            raise ValueError("unbalanced '(' in bracket string")
        return result


def _quote_label(label: str) -> str:
    if any(ch in label for ch in ' ()"\\\t\n'):
        return '"' + label.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return label


def _bracket_tokens(text: str) -> list[tuple[str, str, int]]:
    toks: list[tuple[str, str, int]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            toks.append((ch, ch, i))
            i += 1
        elif ch == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(text[j])
                j += 1
            if j >= n:
                raise ValueError(f"unterminated quoted label starting at offset {i}")
            if not buf:
                raise ValueError(f"empty quoted label at offset {i}")
            toks.append(("label", "".join(buf), i))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '()"':
                j += 1
            toks.append(("label", text[i:j], i))
            i = j
    return toks
