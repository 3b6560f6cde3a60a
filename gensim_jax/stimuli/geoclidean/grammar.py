"""Parser for Geoclidean programs (paper Appendix P) into a typed AST and a generic parse tree.

A Geoclidean program (Hsu et al. 2022) is a sequence of straightedge-and-compass constructions::

    l1* = line(p1(), p2())          # an invisible ('*') line through two free points
    c1 = circle(p1(), p3(l1))       # circle centred at p1 through a point p3 on l1
    l2 = line(p4(c1, l1), p2())     # p4 lies on both c1 and l1 (an intersection)

The grammar of paper Appendix P, written in EBNF (``{ }`` repetition, ``[ ]`` option)::

    program      = construction , { construction } ;
    construction = object_def , "=" , object ;
    object_def   = OBJECT_NAME , [ "*" ] ;                 (* visible | invisible *)
    object       = ( "line" | "circle" ) , "(" , point_ref , "," , point_ref , ")" ;
    point_ref    = POINT_NAME , "(" , [ object_ref , [ "," , object_ref ] ] , ")" ;
    object_ref   = OBJECT_NAME , [ "*" ] ;
    OBJECT_NAME  = LINE_NAME | CIRCLE_NAME ;
    LINE_NAME    = "l" , INDEX ;   CIRCLE_NAME = "c" , INDEX ;   POINT_NAME = "p" , INDEX ;
    INDEX        = nonzero digit , { digit } ;

(The appendix enumerates ``l1..l9``, ``c1..c6``, ``p1..p16``; any positive index is accepted.)

Program text comes in the formats used by the paper and the benchmark, all accepted:

* bare constructions, one after another (newlines are not significant);
* each construction in quotes followed by a comma, as in the benchmark's ``concept.txt`` files
  (``'l1 = line(p1(), p2())',``) and in Appendix O (typographic quotes ``’...’``); the whole
  list may be wrapped in ``[`` ``]``; ``#`` starts a comment that runs to the end of the line;
* a Python sequence of construction strings (the benchmark's in-code format).

The official benchmark files contain two typos, which the parser repairs unless ``strict=True``
(each repair is recorded in :attr:`Program.repairs` with its line and column):

* ``'l3 = line(p2(), p3()))',`` (concept ``eq_t``): a surplus ``)`` after a construction;
* ``'12 = line(p1(), p7(c1, c2))',`` (concept ``rhomboid``): the digit ``1`` typed for the
  letter ``l`` in a line name (``12`` is read as ``l2``).

The parser is a hand-written tokenizer plus recursive descent; it never evaluates program text.
Malformed text raises :class:`GeoclideanSyntaxError` (a ``ValueError``) with the 1-based line and
column and what was expected there. Well-formed text that refers to an object before its
definition, defines an object twice, or builds a circle under a line's name raises
:class:`GeoclideanSemanticError` (a subclass of :class:`GeoclideanSyntaxError`).

The result is a :class:`Program` (typed AST: constructions with their object name, kind,
invisibility marker and two point references, each point with its name and the objects it is
constrained to lie on) whose :meth:`Program.parse_tree` is the derivation tree of the Appendix P
context-free grammar as a :class:`gensim_jax.kernels.trees.Tree`, the input of the tree kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from gensim_jax.kernels.trees import Tree

__all__ = [
    "GeoclideanSyntaxError",
    "GeoclideanSemanticError",
    "ObjectRef",
    "PointRef",
    "Construction",
    "Repair",
    "Program",
    "parse_program",
    "parse_tree",
]

ObjectKind = Literal["line", "circle"]
_QUOTES = "'\"\u2018\u2019\u201c\u201d"
_DIGITS = "0123456789"


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


class GeoclideanSyntaxError(ValueError):
    """A Geoclidean program that does not parse.

    Attributes:
      line, column: 1-based position of the offending character or token.
      expected: what the grammar allows there (e.g. ``"'=' after the object name"``).
      found: the text found there (``"end of input"`` at the end).
    """

    def __init__(self, message: str, line: int, column: int, expected: str = "", found: str = ""):
        self.message = message
        self.line = line
        self.column = column
        self.expected = expected
        self.found = found
        super().__init__(f"line {line}, column {column}: {message}")

    def __reduce__(self):
        return (type(self), (self.message, self.line, self.column, self.expected, self.found))


class GeoclideanSemanticError(GeoclideanSyntaxError):
    """Well-formed program text with an invalid reference or definition (see module docstring)."""


# --------------------------------------------------------------------------------------------
# AST
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectRef:
    """A reference to a line or circle inside a point's constraint list, e.g. ``c1`` in
    ``p3(c1, c2)``. ``starred`` records the (meaningless but grammatical) ``c1*`` form."""

    name: str
    starred: bool = False
    line: int = field(default=0, compare=False, repr=False)
    column: int = field(default=0, compare=False, repr=False)

    @property
    def kind(self) -> ObjectKind:
        """``"line"`` for ``l<k>``, ``"circle"`` for ``c<k>``."""
        return "line" if self.name[0] == "l" else "circle"

    @property
    def index(self) -> int:
        """The number in the name (``3`` for ``c3``)."""
        return int(self.name[1:])


@dataclass(frozen=True)
class PointRef:
    """A point argument ``p<k>(...)``: its name and the objects it must lie on (0, 1 or 2).

    No constraints means a free point or, if the name appeared before, a reference to that
    point; one object: a point on it; two: an intersection of the two objects.
    """

    name: str
    constraints: tuple[ObjectRef, ...] = ()
    line: int = field(default=0, compare=False, repr=False)
    column: int = field(default=0, compare=False, repr=False)

    @property
    def index(self) -> int:
        """The number in the name (``3`` for ``c3``)."""
        return int(self.name[1:])


@dataclass(frozen=True)
class Construction:
    """One construction ``name[*] = kind(point_a, point_b)``.

    For a line, ``points`` are the two points it passes through; for a circle, the centre and
    a point on the circle. ``invisible`` is the ``*`` marker (construction aid, not drawn).
    """

    name: str
    kind: ObjectKind
    points: tuple[PointRef, PointRef]
    invisible: bool = False
    line: int = field(default=0, compare=False, repr=False)
    column: int = field(default=0, compare=False, repr=False)

    @property
    def index(self) -> int:
        """The number in the name (``3`` for ``c3``)."""
        return int(self.name[1:])

    def to_source(self) -> str:
        """Canonical text, e.g. ``"c1* = circle(p1(), p3(l1))"``."""
        pts = ", ".join(
            f"{p.name}({', '.join(o.name + ('*' if o.starred else '') for o in p.constraints)})" for p in self.points
        )
        return f"{self.name}{'*' if self.invisible else ''} = {self.kind}({pts})"


@dataclass(frozen=True)
class Repair:
    """A typo of the benchmark files that the lenient parser fixed, with its position."""

    message: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


@dataclass(frozen=True)
class Program:
    """A parsed Geoclidean program: the typed AST.

    Two programs compare equal when their constructions are equal (positions and repairs are
    ignored), so the same program parsed from different formats compares equal.
    """

    constructions: tuple[Construction, ...]
    repairs: tuple[Repair, ...] = field(default=(), compare=False)

    def __len__(self) -> int:
        return len(self.constructions)

    @property
    def object_names(self) -> tuple[str, ...]:
        """Names of the constructed objects in order of definition."""
        return tuple(c.name for c in self.constructions)

    @property
    def visible_objects(self) -> tuple[str, ...]:
        """Names of the objects that are drawn (no ``*``)."""
        return tuple(c.name for c in self.constructions if not c.invisible)

    @property
    def point_names(self) -> tuple[str, ...]:
        """Distinct point names in order of first appearance."""
        seen: dict[str, None] = {}
        for c in self.constructions:
            for p in c.points:
                seen.setdefault(p.name, None)
        return tuple(seen)

    def point_constraints(self) -> dict[str, tuple[str, ...]]:
        """Each point's constraint objects at its first constrained appearance (``()`` if it
        never has any: a free point)."""
        out: dict[str, tuple[str, ...]] = {}
        for c in self.constructions:
            for p in c.points:
                if p.name not in out or (not out[p.name] and p.constraints):
                    out[p.name] = tuple(o.name for o in p.constraints)
        return out

    def to_source(self) -> str:
        """Canonical program text, one bare construction per line."""
        return "\n".join(c.to_source() for c in self.constructions) + "\n"

    def parse_tree(self) -> Tree:
        """The derivation tree of the Appendix P grammar (see :func:`parse_tree`)."""
        return _build_tree(self)


# --------------------------------------------------------------------------------------------
# tokenizer
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tok:
    kind: str  # NAME NUMBER = * ( ) , [ ] QUOTE EOF, or BAD (an unexpected character)
    text: str
    line: int
    column: int


def _describe(tok: _Tok) -> str:
    if tok.kind == "EOF":
        return "end of input"
    if tok.kind == "QUOTE":
        return f"quote {tok.text!r}"
    return repr(tok.text)


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, line, col, n = 0, 1, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            i, line, col = i + 1, line + 1, 1
            continue
        if ch in " \t\r\f\v\ufeff":
            i, col = i + 1, col + 1
            continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch in "=*(),[]":
            toks.append(_Tok(ch, ch, line, col))
            i, col = i + 1, col + 1
            continue
        if ch in _QUOTES:
            toks.append(_Tok("QUOTE", ch, line, col))
            i, col = i + 1, col + 1
            continue
        if ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ch == "_":
            j = i + 1
            while j < n and (
                ("a" <= text[j] <= "z") or ("A" <= text[j] <= "Z") or text[j] == "_" or text[j] in _DIGITS
            ):
                j += 1
            toks.append(_Tok("NAME", text[i:j], line, col))
            col += j - i
            i = j
            continue
        if ch in _DIGITS:
            j = i + 1
            while j < n and text[j] in _DIGITS:
                j += 1
            toks.append(_Tok("NUMBER", text[i:j], line, col))
            col += j - i
            i = j
            continue
        # reported when the parser reaches it, so that errors come in source order
        toks.append(_Tok("BAD", ch, line, col))
        return toks
    toks.append(_Tok("EOF", "", line, col))
    return toks


def _is_index(s: str) -> bool:
    return bool(s) and s[0] != "0" and all(ch in _DIGITS for ch in s)


def _name_kind(text: str) -> str | None:
    """'line' / 'circle' for object names, 'point' for point names, else None."""
    if len(text) >= 2 and _is_index(text[1:]):
        return {"l": "line", "c": "circle", "p": "point"}.get(text[0])
    return None


# --------------------------------------------------------------------------------------------
# recursive descent parser
# --------------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[_Tok], strict: bool):
        self.toks = tokens
        self.k = 0
        self.strict = strict
        self.repairs: list[Repair] = []

    @property
    def tok(self) -> _Tok:
        t = self.toks[self.k]
        if t.kind == "BAD":
            raise GeoclideanSyntaxError(
                f"unexpected character {t.text!r}",
                t.line,
                t.column,
                expected="a construction",
                found=repr(t.text),
            )
        return t

    def fail(self, expected: str, tok: _Tok | None = None) -> GeoclideanSyntaxError:
        tok = tok or self.tok
        found = _describe(tok)
        return GeoclideanSyntaxError(f"expected {expected}, found {found}", tok.line, tok.column, expected, found)

    def expect(self, kind: str, expected: str) -> _Tok:
        if self.tok.kind != kind:
            raise self.fail(expected)
        t = self.tok
        self.k += 1
        return t

    # program = [ "[" ] item { item } [ "]" ] EOF
    def program(self) -> Program:
        bracketed = self.tok.kind == "["
        if bracketed:
            self.k += 1
        items: list[Construction] = []
        while True:
            if self.tok.kind == "EOF" or (bracketed and self.tok.kind == "]"):
                if not items:
                    raise self.fail("a construction such as 'l1 = line(p1(), p2())'")
                break
            items.append(self.item())
        if bracketed:
            self.expect("]", "']' closing the program list")
        if self.tok.kind != "EOF":
            raise self.fail("end of input")
        return Program(tuple(items), tuple(self.repairs))

    # item = QUOTE construction QUOTE [","] | construction [","]
    def item(self) -> Construction:
        if self.tok.kind == "QUOTE":
            self.k += 1
            c = self.construction()
            self.surplus_parens()
            self.expect("QUOTE", "a closing quote after the construction")
        else:
            c = self.construction()
            self.surplus_parens()
        if self.tok.kind == ",":
            self.k += 1
        return c

    def surplus_parens(self) -> None:
        while self.tok.kind == ")" and not self.strict:
            t = self.tok
            self.repairs.append(Repair("ignored a surplus ')' after the construction", t.line, t.column))
            self.k += 1

    # construction = object_def "=" object
    def construction(self) -> Construction:
        start = self.tok
        name, starred = self.object_name("an object name such as 'l1' or 'c1'")
        self.expect("=", f"'=' after the object name {name}{'*' if starred else ''}")
        kw = self.tok
        if kw.kind != "NAME" or kw.text not in ("line", "circle"):
            raise self.fail("'line' or 'circle'")
        self.k += 1
        self.expect("(", f"'(' after '{kw.text}'")
        p1 = self.point_ref()
        self.expect(",", f"',' between the two points of the {kw.text}")
        p2 = self.point_ref()
        self.expect(")", f"')' closing the {kw.text}")
        return Construction(
            name=name,
            kind=kw.text,  # type: ignore[arg-type]
            points=(p1, p2),
            invisible=starred,
            line=start.line,
            column=start.column,
        )

    # OBJECT_NAME [ "*" ]
    def object_name(self, expected: str) -> tuple[str, bool]:
        t = self.tok
        name = None
        if t.kind == "NAME" and _name_kind(t.text) in ("line", "circle"):
            name = t.text
        elif t.kind == "NUMBER" and not self.strict and len(t.text) >= 2 and t.text[0] == "1" and _is_index(t.text[1:]):
            name = "l" + t.text[1:]
            self.repairs.append(
                Repair(f"read object name {t.text!r} as {name!r} (digit 1 typed for letter l)", t.line, t.column)
            )
        if name is None:
            raise self.fail(expected)
        self.k += 1
        starred = False
        if self.tok.kind == "*":
            starred = True
            self.k += 1
        return name, starred

    # point_ref = POINT_NAME "(" [ object_ref [ "," object_ref ] ] ")"
    def point_ref(self) -> PointRef:
        t = self.tok
        if t.kind != "NAME" or _name_kind(t.text) != "point":
            raise self.fail("a point name such as 'p1'")
        self.k += 1
        self.expect("(", f"'(' after the point name {t.text}")
        refs: list[ObjectRef] = []
        if self.tok.kind != ")":
            refs.append(self.object_ref())
            if self.tok.kind == ",":
                self.k += 1
                refs.append(self.object_ref())
        if self.tok.kind != ")":
            if len(refs) == 2:
                raise self.fail(f"')' after at most two constraints of {t.text}")
            raise self.fail(f"',' or ')' in the constraints of {t.text}")
        self.k += 1
        return PointRef(t.text, tuple(refs), t.line, t.column)

    def object_ref(self) -> ObjectRef:
        t = self.tok
        name, starred = self.object_name("a line or circle name such as 'l1' or 'c1'")
        return ObjectRef(name, starred, t.line, t.column)


def _check_semantics(prog: Program) -> None:
    defined: set[str] = set()
    for c in prog.constructions:
        if c.name[0] != c.kind[0]:
            raise GeoclideanSemanticError(
                f"object {c.name} is a {'line' if c.name[0] == 'l' else 'circle'} name but is built with {c.kind}()",
                c.line,
                c.column,
                expected=f"a {c.kind} name",
                found=c.name,
            )
        for p in c.points:
            names = [o.name for o in p.constraints]
            if len(names) == 2 and names[0] == names[1]:
                o = p.constraints[1]
                raise GeoclideanSemanticError(
                    f"point {p.name} is constrained twice to {o.name}",
                    o.line,
                    o.column,
                    expected="two different objects",
                    found=o.name,
                )
            for o in p.constraints:
                if o.name not in defined:
                    raise GeoclideanSemanticError(
                        f"point {p.name} refers to {o.name}, which is not defined before this construction",
                        o.line,
                        o.column,
                        expected="an object defined earlier",
                        found=o.name,
                    )
        if c.name in defined:
            raise GeoclideanSemanticError(
                f"object {c.name} is defined twice",
                c.line,
                c.column,
                expected="a new object name",
                found=c.name,
            )
        defined.add(c.name)


def parse_program(source: str | Sequence[str], *, strict: bool = False, validate: bool = True) -> Program:
    """Parse a Geoclidean program (paper Appendix P grammar) into a typed :class:`Program`.

    Args:
      source: program text in any of the formats of the module docstring, or a sequence of
        construction strings (each parsed as one item; errors report the item's line).
      strict: reject the two typos of the benchmark files instead of repairing them.
      validate: also check references (objects used before definition, redefinitions, a
        circle built under a line's name); raises :class:`GeoclideanSemanticError`.

    Returns:
      The :class:`Program`; ``program.repairs`` lists any repaired typos.

    Raises:
      GeoclideanSyntaxError: text that does not parse, with line, column and what was expected.
      TypeError: ``source`` is neither a string nor a sequence of strings.

    Example:
      >>> prog = parse_program("'c1 = circle(p1(), p2())',\\n'l1* = line(p3(c1), p4(c1))',")
      >>> prog.object_names, prog.visible_objects
      (('c1', 'l1'), ('c1',))
      >>> prog.constructions[1].points[0].constraints[0].name
      'c1'
    """
    if isinstance(source, str):
        text = source
    elif isinstance(source, Sequence) and all(isinstance(s, str) for s in source):
        for i, s in enumerate(source):
            if "\n" in s:
                raise ValueError(f"source[{i}] spans several lines; give one construction per item")
        text = "\n".join(source)
    else:
        raise TypeError(f"source must be a str or a sequence of str, got {type(source).__name__}")
    prog = _Parser(_tokenize(text), strict).program()
    if validate:
        _check_semantics(prog)
    return prog


def parse_tree(source: str | Sequence[str] | Program, *, strict: bool = False) -> Tree:
    """The parse tree of a program under the Appendix P context-free grammar.

    Node labels are the grammar's nonterminals (``S``, ``ConstructionSequence``,
    ``Construction``, ``ObjectDef``, ``VisibleObject``/``InvisibleObject``, ``OBJECT_NAME``,
    ``LINE_NAME``/``CIRCLE_NAME``, ``Object``, ``Line``/``Circle``, ``PointRef``,
    ``SimplePoint``/``ConstrainedPoint``, ``Point``, ``POINT_NAME``, ``EmptyArgs``,
    ``ConstraintArgs``, ``Constraints``, ``SingleConstraint``/``DoubleConstraint``,
    ``ObjectRef``); leaves are the terminals (``l1``, ``=``, ``line``, ``(``, ``p1``, ...).
    ``ConstructionSequence`` is right-recursive as in the appendix. This is the tree the paper
    compares with Moschitti's kernels (Appendix M); identical subtrees are shared objects.

    Args:
      source: program text, sequence of construction strings, or a parsed :class:`Program`.
      strict: as in :func:`parse_program`.

    Returns:
      :class:`gensim_jax.kernels.trees.Tree`.

    Example:
      >>> t = parse_tree("l1 = line(p1(), p2())")
      >>> t.children[0].children[0].production
      "Construction -> ObjectDef '=' Object"
    """
    prog = source if isinstance(source, Program) else parse_program(source, strict=strict)
    return _build_tree(prog)


def _build_tree(prog: Program) -> Tree:
    cache: dict[tuple, Tree] = {}

    def node(label: str, *children: Tree) -> Tree:
        # hash-consing: equal subtrees become one shared object (the cache keeps every node
        # alive, so the ids in the keys stay unique)
        key = (label, tuple(id(c) for c in children))
        t = cache.get(key)
        if t is None:
            t = cache[key] = Tree(label, children)
        return t

    def leaf(s: str) -> Tree:
        return node(s)

    def object_name(name: str) -> Tree:
        sub = "LINE_NAME" if name[0] == "l" else "CIRCLE_NAME"
        return node("OBJECT_NAME", node(sub, leaf(name)))

    def object_ref(o: ObjectRef) -> Tree:
        if o.starred:
            return node("ObjectRef", object_name(o.name), leaf("*"))
        return node("ObjectRef", object_name(o.name))

    def point_ref(p: PointRef) -> Tree:
        point = node("Point", node("POINT_NAME", leaf(p.name)))
        if not p.constraints:
            empty = node("EmptyArgs", leaf("("), leaf(")"))
            return node("PointRef", node("SimplePoint", point, empty))
        if len(p.constraints) == 1:
            cons = node("Constraints", node("SingleConstraint", object_ref(p.constraints[0])))
        else:
            cons = node(
                "Constraints",
                node("DoubleConstraint", object_ref(p.constraints[0]), leaf(","), object_ref(p.constraints[1])),
            )
        args = node("ConstraintArgs", leaf("("), cons, leaf(")"))
        return node("PointRef", node("ConstrainedPoint", point, args))

    def construction(c: Construction) -> Tree:
        if c.invisible:
            odef = node("ObjectDef", node("InvisibleObject", object_name(c.name), leaf("*")))
        else:
            odef = node("ObjectDef", node("VisibleObject", object_name(c.name)))
        label = "Line" if c.kind == "line" else "Circle"
        obj = node(
            "Object",
            node(label, leaf(c.kind), leaf("("), point_ref(c.points[0]), leaf(","), point_ref(c.points[1]), leaf(")")),
        )
        return node("Construction", odef, leaf("="), obj)

    seq = node("ConstructionSequence", construction(prog.constructions[-1]))
    for c in reversed(prog.constructions[:-1]):
        seq = node("ConstructionSequence", construction(c), seq)
    return node("S", seq)
