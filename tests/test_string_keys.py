"""The keys of SFP and RAPPOR's n-gram discovery (``deniable.oracles._string_keys``): a
canonical ``NAME{JSON}`` of every parameter the reports depend on, written exactly, read
back to the same protocol; anything else refused with one error naming what is wrong."""

from __future__ import annotations

import pytest

from deniable.exceptions import DataError
from deniable.oracles import (
    SFP,
    Rappor,
    RapporNgram,
    is_string_protocol_key,
    rappor_ngram_from_key,
    sfp_from_key,
)

SFP_ABC = SFP(epsilon=4.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=256)
NGRAM = Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75)
FULL = Rappor(m=64, h=2, cohorts=4, f=0.25, p=0.5, q=0.75)
NG = RapporNgram(NGRAM, FULL, alphabet="abc", gram=2, length=4, pairs=1)


def test_the_sfp_key_is_the_documented_closed_form() -> None:
    # sorted fields, compact JSON, floats as exact fractions, alphabet null for bytes
    assert SFP_ABC.key == (
        'sfp{"alphabet":"abc","epsilon":"4","fragment_share":"1/2","k":16,"m":256,'
        '"max_length":4,"puzzle_bits":4,"salt":0,"sketch":"hcms"}'
    )
    cms = SFP(epsilon=0.1, max_length=3, puzzle_bits=2, k=16, m=64, sketch="cms",
              fragment_share=0.25, salt=7)  # fmt: skip
    assert cms.key == (
        'sfp{"alphabet":null,"epsilon":"3602879701896397/36028797018963968",'
        '"fragment_share":"1/4","k":16,"m":64,"max_length":3,"puzzle_bits":2,"salt":7,'
        '"sketch":"cms"}'
    )
    # the server's alpha and max_candidates are not in it: the same reports, the same key
    other = SFP(epsilon=4.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=256,
                alpha=0.2, max_candidates=9)  # fmt: skip
    assert other.key == SFP_ABC.key
    assert SFP_ABC.tally(SFP_ABC.randomize(["ab"], rng=1)).key == SFP_ABC.key


@pytest.mark.parametrize(
    "sfp",
    [
        SFP_ABC,
        SFP(epsilon=0.1, max_length=3, puzzle_bits=2, k=16, m=64, sketch="cms", salt=7),
        SFP(epsilon=2.0, max_length=5, alphabet="é€x", puzzle_bits=1, k=8, m=512),
    ],
)
def test_an_sfp_key_reads_back_to_the_same_protocol(sfp: SFP) -> None:
    assert sfp_from_key(sfp.key) == sfp
    back = sfp_from_key(sfp.key, alpha=0.3, max_candidates=5)
    assert (back.alpha, back.max_candidates, back.key) == (0.3, 5, sfp.key)
    assert is_string_protocol_key(sfp.key)


def test_the_ngram_key_is_the_documented_closed_form() -> None:
    assert NG.key == (
        'rappor-ngram{"alphabet":"abc","full":{"cohorts":4,"f":"1/4","h":2,"m":64,"p":"1/2",'
        '"q":"3/4"},"gram":2,"length":4,"ngram":{"cohorts":8,"f":"1/2","h":2,"m":32,'
        '"p":"1/2","q":"3/4"},"pad":"_","pairs":1}'
    )
    # the nested objects are the RAPPOR keys' own parameters
    assert NG.key.count(NGRAM.key.removeprefix("rappor")) == 1


@pytest.mark.parametrize(
    "ng",
    [
        NG,
        RapporNgram(NGRAM, None, alphabet="xyz", gram=1, length=3, pairs=3, pad="."),
    ],
)
def test_an_ngram_key_reads_back_to_the_same_protocol(ng: RapporNgram) -> None:
    assert rappor_ngram_from_key(ng.key) == ng
    assert is_string_protocol_key(ng.key)
    assert not is_string_protocol_key(NGRAM.key) and not is_string_protocol_key("pem{}")


@pytest.mark.parametrize(
    ("key", "named"),
    [
        ("sfp(epsilon=4.0)", "must look like"),  # the old form, not a key
        ("sfp{", "must look like"),
        ('pem{"epsilon":"4"}', "must look like"),
        (SFP_ABC.key.replace('"salt":0,', ""), "missing salt"),
        (SFP_ABC.key.replace('"salt":0,', '"salt":0,"seed":1,'), "unknown seed"),
        (SFP_ABC.key.replace('"abc"', "3"), "'alphabet' must be a string or null"),
        (SFP_ABC.key.replace('"hcms"', "null"), "'sketch' must be a string"),
        (SFP_ABC.key.replace('"hcms"', '"bloom"'), "`sketch`"),
        (SFP_ABC.key.replace('"max_length":4', '"max_length":99'), "`max_length`"),
        (SFP_ABC.key.replace('"epsilon":"4"', '"epsilon":"x"'), "epsilon"),
        (SFP_ABC.key.replace('"epsilon":"4"', '"epsilon":4.0'), "epsilon"),
        (SFP_ABC.key.replace(",", ", "), "not canonical"),
    ],
)
def test_a_bad_sfp_key_is_one_data_error_naming_what_is_wrong(key: str, named: str) -> None:
    with pytest.raises(DataError, match="`key`") as info:
        sfp_from_key(key)
    assert named in str(info.value)


@pytest.mark.parametrize(
    ("key", "named"),
    [
        ("rappor-ngram[]", "must look like"),
        (NGRAM.key, "must look like"),
        (NG.key.replace('"pairs":1', '"pair":1'), "missing pairs; unknown pair"),
        (NG.key.replace('"pad":"_"', '"pad":null'), "'pad' must be a string"),
        (NG.key.replace('"gram":2', '"gram":3'), "`length`"),
        (NG.key.replace('"h":2,"m":32', '"h":2,"m":33'), "field 'ngram'"),
        (NG.key.replace('"cohorts":4,', ""), "field 'full'"),
        (
            NG.key.replace(FULL.key.removeprefix("rappor"), "[1]"),
            "'full' must be an object of RAPPOR parameters or null",
        ),
        (NG.key.replace('"pad":"_"', '"pad":"a"'), "`pad`"),
        (NG.key.replace('"full":{"cohorts":4,', '"full":{ "cohorts":4,'), "not canonical"),
    ],
)
def test_a_bad_ngram_key_is_one_data_error_naming_what_is_wrong(key: str, named: str) -> None:
    with pytest.raises(DataError, match="`key`") as info:
        rappor_ngram_from_key(key)
    assert named in str(info.value)
