"""`deniable survey invite --attributes CSV`: each invitation stores the design attributes
of its row (the links in the file's order); a bad file or value is one error line, and
neither links nor invitations are written (SQLite and PostgreSQL)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from deniable.cli import app
from deniable.service.storage import ServiceStore, hash_token
from deniable.service.storage.tables import invitations

STRONG = "x7Qp2Lm9Vd4Kc8Rt1Wz6Hs3Nb5Gf0Yj2Ue4Ia7Oq9Pw"
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "DENIABLE_SURVEY": None,
       "DATABASE_URL": None, "DENIABLE_ADMIN_TOKEN": STRONG}  # fmt: skip
GOOD = "stratum,psu,weight,region\nnorth,school 1,12.5,n\nsouth,school 2,30,s\nsouth,school 3,7,s\n"


def run(*args: str) -> Any:
    return CliRunner(env=ENV).invoke(app, list(args), catch_exceptions=False)


def _invite(db: str, tmp_path: Path, text: str, count: int = 3) -> tuple[Any, Path]:
    attrs = tmp_path / "attrs.csv"
    attrs.write_text(text)
    out = tmp_path / "links.txt"
    res = run("survey", "invite", "--count", str(count), "--out", str(out), "--db", db,
              "--base-url", "https://x.org", "--attributes", str(attrs))  # fmt: skip
    return res, out


def _stored(db: str) -> dict[str, Any]:
    store = ServiceStore(db)
    store.migrate()
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(sa.select(invitations.c.token_hash, invitations.c.attributes))
            return {h: a for h, a in rows}
    finally:
        store.close()


def test_each_link_carries_its_rows_attributes(db_url: str, tmp_path: Path) -> None:
    res, out = _invite(db_url, tmp_path, GOOD)
    assert res.exit_code == 0, res.output
    assert "in the order of" in res.stdout
    tokens = [parse_qs(urlsplit(x).query)["invitation"][0] for x in out.read_text().split()]
    stored = _stored(db_url)
    assert [stored[hash_token(t)] for t in tokens] == [
        {"stratum": "north", "psu": "school 1", "weight": 12.5, "region": "n"},
        {"stratum": "south", "psu": "school 2", "weight": 30.0, "region": "s"},
        {"stratum": "south", "psu": "school 3", "weight": 7.0, "region": "s"},
    ]


@pytest.mark.parametrize(
    ("text", "count", "needles"),
    [
        (GOOD, 2, ["`--attributes`", "one row per invitation (--count 2)", "got more than 2"]),
        (GOOD, 4, ["`--attributes`", "one row per invitation (--count 4)", "got 3"]),
        (GOOD.replace("12.5", "0"), 3, ["data row 1", "`weight`", "> 0", "'0'"]),
        (GOOD.replace("12.5", "-1"), 3, ["data row 1", "`weight`", "'-1'"]),
        (GOOD.replace("12.5", "nan"), 3, ["data row 1", "`weight`"]),
        (GOOD.replace("30", "heavy"), 3, ["data row 2", "`weight`", "'heavy'"]),
        (GOOD.replace("school 3", ""), 3, ["data row 3", "`psu`", "1 to 64"]),
        (GOOD.replace("region", "happy"), 3, ["'happy'", "question id"]),
        (GOOD.replace("region", "Region"), 3, ["'Region'", "lower-case"]),
        (GOOD.replace(",n\n", ",n,extra\n"), 3, ["data row 1", "4 columns expected"]),
        ("", 3, ["header row"]),
    ],
)
def test_bad_attributes_are_one_error_and_write_nothing(
    tmp_path: Path, text: str, count: int, needles: list[str]
) -> None:
    db = f"sqlite:///{tmp_path}/d.db"
    res, out = _invite(db, tmp_path, text, count)
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert not out.exists()
    if Path(f"{tmp_path}/d.db").exists():
        assert _stored(db) == {}


class _Counting(io.FileIO):
    """A file that adds up the bytes read from the disk."""

    total = 0

    def readinto(self, buffer: Any) -> int | None:
        n = super().readinto(buffer)
        _Counting.total += n or 0
        return n

    def readall(self) -> bytes:
        data = super().readall()
        _Counting.total += len(data)
        return data


def _counting_open(file: Any, mode: str = "r", buffering: int = -1, encoding: str | None = None,
                   errors: str | None = None, newline: str | None = None) -> Any:  # fmt: skip
    buf = io.BufferedReader(_Counting(file, "r"))
    if "b" in mode:
        return buf
    return io.TextIOWrapper(buf, encoding=encoding, errors=errors, newline=newline)


@pytest.mark.parametrize(
    ("shape", "needles"),
    [  # 8 MB either way, for --count 3 (at most 4 * MAX_ROW_BYTES = 8 KiB are read)
        ("rows", ["one row per invitation (--count 3)", "got more than 3"]),
        ("one line", ["larger than 8,192 bytes", "--count 3", "2,048 bytes per invitation"]),
    ],
)
def test_a_huge_attributes_file_is_refused_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, needles: list[str]
) -> None:
    import deniable.cli._invite_attributes as module

    size = 8 << 20
    row = "south,school 2,30,s\n" if shape == "rows" else "south,"
    text = "stratum,psu,weight,region\n" + row * (size // len(row))
    monkeypatch.setattr(module, "open", _counting_open, raising=False)
    _Counting.total = 0
    res, out = _invite(f"sqlite:///{tmp_path}/d.db", tmp_path, text, count=3)
    assert res.exit_code == 2, res.output
    assert 0 < _Counting.total <= 64 << 10, _Counting.total  # a few buffers, not 8 MB
    line = res.stderr.strip()
    assert line.startswith("error: `--attributes`") and "\n" not in line, res.stderr
    for needle in needles:
        assert needle in line, (needle, line)
    assert not out.exists()


def test_attributes_at_the_store_limits_fit_the_byte_limit(tmp_path: Path) -> None:
    from deniable.cli._invite_attributes import MAX_ROW_BYTES, read_attributes
    from deniable.service.storage.attributes import MAX_VALUE_LENGTH, MAX_VARIABLES

    names = ["stratum", "psu", "weight", *(f"v{i}" for i in range(MAX_VARIABLES))]
    value = '"' + 'a""b' * (MAX_VALUE_LENGTH // 3) + '"'  # quoted, quotes doubled
    row = ",".join(value if n != "weight" else "1.2345678901234567e+300" for n in names)
    assert len(row) < MAX_ROW_BYTES
    path = tmp_path / "big.csv"
    path.write_text(",".join(names) + "\n" + (row + "\r\n") * 50)
    attrs, variables = read_attributes(str(path), 50)
    assert len(attrs) == 50 and variables == names[3:]
    assert attrs[0]["stratum"] == 'a"b' * (MAX_VALUE_LENGTH // 3)
