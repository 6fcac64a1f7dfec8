"""The README and the user guide in docs/: every relative link leads to a file of the repository (and an
#anchor to a heading of that file, as GitHub makes its anchors), the guide's index reaches every page, the
README stays a front door (at most 15 KiB), and docs/cli.md is what scripts/cli_reference.py writes from the
argument parser today."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
INDEX = DOCS / "README.md"
README_LIMIT = 15 * 1024

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[`~]*[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.M)
HTML_ID = re.compile(r"""<a\s[^>]*?(?:name|id)=["']([^"']+)["']""", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _blank(match: re.Match) -> str:
    """The matched text with everything but its line breaks turned into spaces (line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def _prose(text: str) -> str:
    """Markdown text without fenced code blocks and `code spans`, where a link is only text."""
    return CODE_SPAN.sub(_blank, FENCE.sub(_blank, text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without Markdown, lower case, punctuation dropped (word
    characters, hyphens and spaces kept), spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)      # a link: its text
    text = re.sub(r"<[^>]+>", "", text)                               # inline HTML
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every #anchor GitHub gives a Markdown file: its headings' slugs (a repeated one as slug-1, slug-2...)
    and the ids of <a name/id="..."> tags."""
    text = FENCE.sub(_blank, path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for m in HEADING.finditer(text):
        s = slug(m.group(2))
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    found |= set(HTML_ID.findall(text))
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and reference definition of a Markdown file, outside code."""
    text = _prose(path.read_text(encoding="utf-8"))
    found = [(m.start(1), m.group(1)) for m in LINK.finditer(text)]
    found += [(m.start(1), m.group(1)) for m in REFDEF.finditer(text)]
    return sorted((text.count("\n", 0, pos) + 1, target) for pos, target in found)


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    """One line for every relative link of `path` that leads nowhere: a missing file, a file outside the
    repository, or an #anchor that is not a heading of its file."""
    problems = []
    for line, target in links(path):
        if SCHEME.match(target) or target.startswith("//"):
            continue                                               # http(s), mailto: not checked here
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path.resolve()
        where = f"{path.relative_to(root)}:{line}: ({target})"
        if not dest.is_relative_to(root.resolve()):
            problems.append(f"{where} leads outside the repository")
        elif not dest.exists():
            problems.append(f"{where} leads to a missing file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: {dest.relative_to(root.resolve())} has no heading #{anchor}")
    return problems


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.glob("*.md"))]


def test_every_relative_link_resolves():
    problems = [p for page in pages() for p in broken_links(page)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_link_check_finds_broken_links(tmp_path):
    """The check itself: a missing file, a missing heading and a file outside the root are each found;
    links in code, web links and good anchors are not."""
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading: yes\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#a-code-heading-yes) [ok](other.md#twice-1) [ok](#page) "
                    "[web](https://example.com/x)\n`[in code](missing.md)`\n```\n[in a block](missing.md)\n```\n"
                    "[gone](missing.md)\n[no heading](other.md#nowhere)\n[outside](../elsewhere.md)\n")
    problems = broken_links(page, root=tmp_path)
    assert len(problems) == 3, problems
    assert "page.md:8: (missing.md) leads to a missing file" in problems[0]
    assert "has no heading #nowhere" in problems[1]
    assert "leads outside the repository" in problems[2]


def test_github_slugs():
    assert slug("Putting a model into your own firmware: `edgec export`") == \
        "putting-a-model-into-your-own-firmware-edgec-export"
    assert slug("Below the tensor-level bound: `--ram-budget BYTES`") == "below-the-tensor-level-bound---ram-budget-bytes"
    assert slug("Set-up on a fresh Debian/Ubuntu machine") == "set-up-on-a-fresh-debianubuntu-machine"


def test_the_index_reaches_every_page():
    linked = {(INDEX.parent / t.partition("#")[0]).resolve() for _, t in links(INDEX) if not SCHEME.match(t)}
    missing = sorted(p.name for p in DOCS.glob("*.md") if p != INDEX and p.resolve() not in linked)
    assert not missing, f"docs/README.md (the guide's index) does not link: {', '.join(missing)}"


def test_the_readme_is_a_front_door():
    size = (REPO / "README.md").stat().st_size
    assert size <= README_LIMIT, (f"README.md is {size:,} bytes, over {README_LIMIT:,} (15 KiB): move the detail "
                                  "into a page of docs/ and link it")
    targets = {t.partition("#")[0] for _, t in links(REPO / "README.md")}
    assert "docs/README.md" in targets, "README.md does not link the guide's index, docs/README.md"
    text = (REPO / "README.md").read_text()
    for command in ("bash scripts/setup.sh && bash scripts/demo.sh", "bash scripts/setup.sh && bash scripts/test.sh"):
        assert command in text, f"README.md lost its set-up command `{command}`"


def test_cli_reference_is_up_to_date():
    spec = importlib.util.spec_from_file_location("cli_reference", REPO / "scripts" / "cli_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    expected = mod.render()
    current = (DOCS / "cli.md").read_text() if (DOCS / "cli.md").exists() else ""
    assert current == expected, ("docs/cli.md differs from the argument parser (edgec/cli_parser.py): "
                                 "regenerate it with `python scripts/cli_reference.py`")


# A repository path named in prose, a comment or a docstring: a top folder of the repository, then a file name with
# one of the extensions below (no wildcards); what a user writes for themselves (their own board file) is not ours.
PATH_MENTION = re.compile(r"(?<![\w./-])((?:edgec|runtime_c|templates|boards|tests|scripts|benchmarks|examples|docs)"
                          r"/[\w./-]*\.(?:py|c|h|md|j2|toml|json|sh|txt|ld\.in))(?![\w*])")
USER_FILES = {"boards/my-board.toml"}
SCANNED = ("edgec", "runtime_c", "templates", "boards", "tests", "scripts", "benchmarks", "docs", "examples")


def stale_paths(root: Path = REPO) -> list[str]:
    """'file: path' for every repository path a text file of the repository names that does not exist."""
    bad = []
    files = [root / "README.md"] + [p for d in SCANNED for p in sorted((root / d).rglob("*"))
                                    if p.is_file() and p.suffix in (".py", ".c", ".h", ".md", ".j2", ".toml", ".sh")
                                    and "__pycache__" not in p.parts and p != Path(__file__)]    # (its made-up cases)
    for f in files:
        for m in PATH_MENTION.finditer(f.read_text(errors="replace")):
            if m.group(1) not in USER_FILES and not (root / m.group(1)).exists():
                bad.append(f"{f.relative_to(root)}: {m.group(1)}")
    return bad


def test_every_path_the_repository_names_exists():
    """Comments, docstrings and pages name files by their paths; a moved or renamed file must take them along."""
    assert stale_paths() == []


def test_the_path_check_finds_a_stale_path(tmp_path):
    (tmp_path / "edgec").mkdir()
    (tmp_path / "edgec" / "a.py").write_text('"""See edgec/b.py and edgec/a.py, and edgec/*_x.c."""\n')
    (tmp_path / "README.md").write_text("The planner is `edgec/plan/gone.py`.\n")
    assert stale_paths(tmp_path) == ["README.md: edgec/plan/gone.py", "edgec/a.py: edgec/b.py"]
