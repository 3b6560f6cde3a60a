"""Tests for the Geoclidean grammar (paper Appendix P): every benchmark and Appendix O program
parses, parse trees use exactly the Appendix P productions, errors carry line and column."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensim_jax.kernels.trees import Tree
from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_PROGRAMS, concept_program
from gensim_jax.stimuli.geoclidean.grammar import (
    Construction,
    GeoclideanSemanticError,
    GeoclideanSyntaxError,
    ObjectRef,
    PointRef,
    Program,
    parse_program,
    parse_tree,
)

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO / ".." / "shared"
GEOCLIDEAN = SHARED / "reference" / "geoclidean"
PAPER = SHARED / "seeds" / "gensim_paper_with_appendix_readable.txt"

needs_reference = pytest.mark.skipif(
    not GEOCLIDEAN.is_dir(), reason="shared/reference/geoclidean (benchmark files) not present"
)
needs_paper = pytest.mark.skipif(not PAPER.is_file(), reason="shared/seeds paper not present")


def _reference_files():
    return sorted(GEOCLIDEAN.glob("*/concept_*/*.txt")) if GEOCLIDEAN.is_dir() else []


def _appendix(start: str, end: str) -> list[str]:
    text = PAPER.read_text(encoding="utf-8")
    a = text.index(start + "\n")
    b = text.index(end + "\n")
    return text[a:b].splitlines()[1:]


def _appendix_o_programs() -> dict[str, str]:
    """name -> program text, cut from Appendix O of the paper as printed (typographic quotes,
    trailing commas, '****' marking test concepts)."""
    progs: dict[str, list[str]] = {}
    cur = None
    block = _appendix("Appendix O Geoclidean Concepts", "Appendix P Geoclidean Context-Free Grammar")
    for line in block:
        s = line.strip()
        if not s or s.startswith("Below are"):
            continue
        if s[0] in "\u2018\u2019'":
            progs[cur].append(s)  # type: ignore[index]
        else:
            cur = s.rstrip("*")
            progs[cur] = []
    return {k: "\n".join(v) for k, v in progs.items()}


# --------------------------------------------------------------------------------------------
# the benchmark files and Appendix O
# --------------------------------------------------------------------------------------------


@needs_reference
def test_every_reference_program_parses():
    files = _reference_files()
    assert len(files) == 37 * 3
    for f in files:
        prog = parse_program(f.read_text(encoding="utf-8"))
        assert len(prog) >= 2
        tree = prog.parse_tree()
        assert tree.label == "S"
        # the parse tree's terminals spell the program's tokens (canonical form)
        tokens = re.findall(r"[A-Za-z]+\d*|\d+|[=*(),]", prog.to_source())
        leaves = [n.label for n in tree.postorder() if n.is_leaf]
        assert leaves == tokens, f


@needs_reference
def test_reference_typos_are_repaired_only_when_lenient():
    # eq_t: "'l3 = line(p2(), p3()))'," -- the surplus ')' is at line 5, column 23
    for f in sorted(GEOCLIDEAN.glob("elements/concept_eq_t/*.txt")):
        text = f.read_text(encoding="utf-8")
        prog = parse_program(text)
        assert [(r.line, r.column) for r in prog.repairs] == [(5, 23)]
        with pytest.raises(GeoclideanSyntaxError) as e:
            parse_program(text, strict=True)
        assert (e.value.line, e.value.column) == (5, 23)
        assert "closing quote" in e.value.expected
    # rhomboid: "'12 = line(...)'," ... on lines 6-9: '1' typed for 'l', column 2
    for f in sorted(GEOCLIDEAN.glob("elements/concept_rhomboid/*.txt")):
        text = f.read_text(encoding="utf-8")
        prog = parse_program(text)
        assert [(r.line, r.column) for r in prog.repairs] == [(6, 2), (7, 2), (8, 2), (9, 2)]
        assert prog.object_names[5:] == ("l2", "l3", "l4", "l5")
        with pytest.raises(GeoclideanSyntaxError) as e:
            parse_program(text, strict=True)
        assert (e.value.line, e.value.column) == (6, 2)
        assert e.value.found == "'12'"
    # all other files are clean
    for f in _reference_files():
        if f.parent.name not in ("concept_eq_t", "concept_rhomboid"):
            assert parse_program(f.read_text(encoding="utf-8"), strict=True).repairs == ()


@needs_paper
def test_appendix_o_programs_parse_and_match_concepts_module():
    progs = _appendix_o_programs()
    assert len(progs) == 37
    assert set(progs) == set(CONCEPT_PROGRAMS)
    for name, text in progs.items():
        prog = parse_program(text, strict=True)
        assert prog == concept_program(name), name


@needs_reference
def test_reference_concepts_equal_appendix_o():
    for f in sorted(GEOCLIDEAN.glob("*/concept_*/concept.txt")):
        name = f.parent.name[len("concept_") :]
        assert parse_program(f.read_text(encoding="utf-8")) == concept_program(name), name


@needs_paper
def test_parse_trees_use_exactly_the_appendix_p_productions():
    # The non-name productions of Appendix P, read from the paper itself.
    allowed: set[str] = set()
    appendix_p = _appendix(
        "Appendix P Geoclidean Context-Free Grammar",
        "Appendix Q Consistency of Geometric Regularity Effect Across Different Subjects",
    )
    for line in appendix_p:
        if "->" not in line:
            continue
        lhs, rhs = (x.strip() for x in line.replace("\u2019", "'").split("->"))
        if lhs in ("LINE_NAME", "CIRCLE_NAME", "POINT_NAME"):
            continue
        for alt in rhs.split("|"):
            allowed.add(f"{lhs} -> {' '.join(alt.split())}")
    assert len(allowed) == 27
    name_rule = re.compile(r"^(LINE_NAME -> 'l|CIRCLE_NAME -> 'c|POINT_NAME -> 'p)[1-9]\d*'$")
    used: set[str] = set()
    for text in CONCEPT_PROGRAMS.values():
        for prod in parse_tree(text).productions():
            if name_rule.match(prod):
                continue
            assert prod in allowed, prod
            used.add(prod)
    # the 37 concepts exercise every rule except the starred object reference
    assert allowed - used == {"ObjectRef -> OBJECT_NAME '*'"}
    assert (
        "ObjectRef -> OBJECT_NAME '*'" in parse_tree("c1 = circle(p1(), p2())\nl1 = line(p3(c1*), p4())").productions()
    )


def test_parse_tree_by_hand():
    text = "c1* = circle(p1(), p2())\nl1 = line(p3(c1), p2())"
    # Derivation under Appendix P, written out by hand.
    circle = (
        "(Construction (ObjectDef (InvisibleObject (OBJECT_NAME (CIRCLE_NAME c1)) *)) = "
        '(Object (Circle circle "(" '
        '(PointRef (SimplePoint (Point (POINT_NAME p1)) (EmptyArgs "(" ")"))) , '
        '(PointRef (SimplePoint (Point (POINT_NAME p2)) (EmptyArgs "(" ")"))) ")")))'
    )
    line = (
        "(Construction (ObjectDef (VisibleObject (OBJECT_NAME (LINE_NAME l1)))) = "
        '(Object (Line line "(" '
        '(PointRef (ConstrainedPoint (Point (POINT_NAME p3)) (ConstraintArgs "(" '
        '(Constraints (SingleConstraint (ObjectRef (OBJECT_NAME (CIRCLE_NAME c1))))) ")"))) , '
        '(PointRef (SimplePoint (Point (POINT_NAME p2)) (EmptyArgs "(" ")"))) ")")))'
    )
    expected = Tree.from_bracket(f"(S (ConstructionSequence {circle} (ConstructionSequence {line})))")
    assert parse_tree(text) == expected


def test_typed_ast_by_hand():
    prog = parse_program("'l1* = line(p1(), p2())',\n'c1 = circle(p1(), p3(l1))',\n'l2 = line(p4(c1, l1), p3())',")
    assert prog.constructions == (
        Construction("l1", "line", (PointRef("p1"), PointRef("p2")), invisible=True),
        Construction("c1", "circle", (PointRef("p1"), PointRef("p3", (ObjectRef("l1"),)))),
        Construction("l2", "line", (PointRef("p4", (ObjectRef("c1"), ObjectRef("l1"))), PointRef("p3"))),
    )
    assert prog.object_names == ("l1", "c1", "l2")
    assert prog.visible_objects == ("c1", "l2")
    assert prog.point_names == ("p1", "p2", "p3", "p4")
    assert prog.point_constraints() == {"p1": (), "p2": (), "p3": ("l1",), "p4": ("c1", "l1")}
    c = prog.constructions[2]
    assert (c.line, c.column, c.index, c.points[0].line, c.points[0].column) == (3, 2, 2, 3, 12)
    assert c.points[0].constraints[1].kind == "line"
    assert c.to_source() == "l2 = line(p4(c1, l1), p3())"


def test_accepted_formats_agree():
    bare = "l1 = line(p1(), p2())\nc1* = circle(p1(), p2())"
    variants = [
        "'l1 = line(p1(), p2())',\n'c1* = circle(p1(), p2())',",
        "\u2019l1 = line(p1(), p2())\u2019,\n\u2019c1* = circle(p1(), p2())\u2019,",
        "['l1 = line(p1(), p2())', \"c1* = circle(p1(), p2())\"]",
        "# comment\nl1=line(p1(),p2())  c1 *=circle( p1 ( ) , p2 ( ) )\r\n",
        ["l1 = line(p1(), p2())", "c1* = circle(p1(), p2())"],
        ("'l1 = line(p1(), p2())',", "'c1* = circle(p1(), p2())',"),
    ]
    ref = parse_program(bare)
    for v in variants:
        assert parse_program(v) == ref, v
    assert parse_program(ref.to_source()) == ref


# --------------------------------------------------------------------------------------------
# errors: line, column, expected
# --------------------------------------------------------------------------------------------

# (text, line, column, a word of `expected`); columns counted by hand, 1-based.
SYNTAX_ERRORS = [
    # "l1 = line(p1(), p2()" is 20 characters; end of input at column 21
    ("l1 = line(p1(), p2()", 1, 21, "')' closing the line"),
    # 'lin' starts at column 6
    ("l1 = lin(p1(), p2())", 1, 6, "'line' or 'circle'"),
    # line 2: "c1 = circle(p1() p2())": 'p2' at column 18 where ',' belongs
    ("l1 = line(p1(), p2())\nc1 = circle(p1() p2())", 2, 18, "','"),
    # missing '=': 'line' at column 4
    ("l1 line(p1(), p2())", 1, 4, "'='"),
    # not an object name at column 1
    ("x1 = line(p1(), p2())", 1, 1, "object name"),
    # leading zero index
    ("l01 = line(p1(), p2())", 1, 1, "object name"),
    # 'q1' at column 11 where a point belongs
    ("l1 = line(q1(), p2())", 1, 11, "point name"),
    # a third constraint: the ',' after c2 is at column 20
    ("l1 = line(p1(c1, c2, c3), p2())", 1, 20, "at most two constraints"),
    # unterminated quote: end of input at column 23 (1 quote + 21 characters)
    ("'l1 = line(p1(), p2())", 1, 23, "closing quote"),
    # empty program
    ("", 1, 1, "construction"),
    ("\n\n  ", 3, 3, "construction"),
    # CRLF line ends: 'lin' on line 2, column 6
    ("l1 = line(p1(), p2())\r\nl2 = lin(p3(), p4())", 2, 6, "'line' or 'circle'"),
    # Python code is rejected, never run: '__import__' at column 1
    ("__import__('os').system('echo hacked')", 1, 1, "object name"),
    # unclosed list bracket: end of input at column 25
    ("['l1 = line(p1(), p2())'", 1, 25, "']'"),
]


@pytest.mark.parametrize("text,line,column,expected", SYNTAX_ERRORS)
def test_syntax_errors_have_line_and_column(text, line, column, expected):
    with pytest.raises(GeoclideanSyntaxError) as e:
        parse_program(text)
    err = e.value
    assert isinstance(err, ValueError)
    assert not isinstance(err, GeoclideanSemanticError)
    assert (err.line, err.column) == (line, column), str(err)
    assert expected in err.expected
    assert str(err).startswith(f"line {line}, column {column}: expected")


def test_unexpected_character():
    with pytest.raises(GeoclideanSyntaxError) as e:
        parse_program("l1 = line(p1(), p2()) $")
    assert (e.value.line, e.value.column) == (1, 23)
    assert "unexpected character '$'" in str(e.value)


SEMANTIC_ERRORS = [
    # c1 referenced (column 14) before any definition
    ("l1 = line(p1(c1), p2())", 1, 14, "not defined"),
    # l1 defined twice: line 2 column 1
    ("l1 = line(p1(), p2())\nl1 = line(p3(), p4())", 2, 1, "defined twice"),
    # a circle under a line's name
    ("l1 = circle(p1(), p2())", 1, 1, "built with circle()"),
    # the same object twice in one constraint list: second c1 at column 18
    ("c1 = circle(p1(), p2())\nl1 = line(p2(c1, c1), p3())", 2, 18, "constrained twice"),
    # an object may not constrain its own points
    ("l1 = line(p1(l1), p2())", 1, 14, "not defined"),
]


@pytest.mark.parametrize("text,line,column,message", SEMANTIC_ERRORS)
def test_semantic_errors(text, line, column, message):
    with pytest.raises(GeoclideanSemanticError) as e:
        parse_program(text)
    assert (e.value.line, e.value.column) == (line, column), str(e.value)
    assert message in str(e.value)
    copy = pickle.loads(pickle.dumps(e.value))  # survives process boundaries intact
    assert type(copy) is GeoclideanSemanticError
    assert (copy.line, copy.column, str(copy)) == (line, column, str(e.value))
    # validate=False parses the text
    assert isinstance(parse_program(text, validate=False), Program)


def test_bad_source_types():
    with pytest.raises(TypeError, match="source"):
        parse_program(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"source\[0\]"):
        parse_program(["l1 = line(p1(), p2())\nl2 = line(p3(), p4())"])


# --------------------------------------------------------------------------------------------
# random programs round trip
# --------------------------------------------------------------------------------------------


@st.composite
def programs(draw):
    n = draw(st.integers(1, 7))
    objects: list[str] = []
    counts = {"l": 0, "c": 0}
    npoints = 0
    out = []
    for _ in range(n):
        kind = draw(st.sampled_from(["l", "c"]))
        counts[kind] += 1
        name = f"{kind}{counts[kind]}"
        pts = []
        for _ in range(2):
            if npoints and draw(st.booleans()):
                pts.append(PointRef(f"p{draw(st.integers(1, npoints))}"))
                continue
            npoints += 1
            k = draw(st.integers(0, min(2, len(objects))))
            cons = draw(st.permutations(objects))[:k] if k else []
            pts.append(PointRef(f"p{npoints}", tuple(ObjectRef(o, draw(st.booleans())) for o in cons)))
        out.append(Construction(name, "line" if kind == "l" else "circle", tuple(pts), draw(st.booleans())))
        objects.append(name)
    return Program(tuple(out))


@settings(max_examples=60, deadline=None)
@given(programs(), st.sampled_from(["bare", "quoted", "typographic", "list"]))
def test_random_programs_round_trip(prog, fmt):
    lines = [c.to_source() for c in prog.constructions]
    if fmt == "bare":
        src = " ".join(lines)
    elif fmt == "quoted":
        src = "\n".join(f"'{s}'," for s in lines)
    elif fmt == "typographic":
        src = "\n".join(f"\u2019{s}\u2019," for s in lines)
    else:
        src = lines
    parsed = parse_program(src, strict=True)
    assert parsed == prog
    assert parse_tree(src) == parse_tree(prog)
    # the number of Construction nodes equals the number of constructions
    assert sum(n.label == "Construction" for n in parse_tree(prog).postorder()) == len(prog)
