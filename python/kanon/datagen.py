"""Seeded generator of a realistic, census-like table, built inside DuckDB by one SQL statement.

:func:`census` creates a table of synthetic people modelled loosely on the US census and the
UCI *Adult* data set: two direct identifiers, eight quasi-identifiers, two sensitive and one
insensitive attribute (see :data:`CENSUS_ROLES`). The marginal distributions are skewed like
the real ones (one dominant race and native country, a heavy head and a long tail of ZIP
prefixes, an age pyramid with a tail to 90) and several attributes are correlated:

* age → marital status (young people are mostly never married, the old often widowed),
  education (capped by age, lower for older people) and hours per week;
* a hidden region (the first ZIP digit) → ZIP prefix, race and native country;
* race → native country; sex → first name, occupation, hours and income;
* education → occupation → income; age, sex and hours → income.

Every random draw is a pure function of ``(seed, row number, per-draw salt)`` built on
DuckDB's ``hash()``, never ``random()``, so the same ``(rows, seed)`` gives the identical table
on every run and for every thread count. The statement streams over ``range(rows)`` (no join,
sort or aggregate), so memory stays modest even at tens of millions of rows.

Example:
    >>> import duckdb
    >>> from kanon.datagen import census
    >>> con = duckdb.connect()
    >>> census(con, "people", rows=1_000, seed=7)
    'people'
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kanon.exceptions import InvalidInputError
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    import duckdb

__all__ = ["CENSUS_COLUMNS", "CENSUS_ROLES", "REFERENCE_DATE", "census"]

#: Date at which ``age`` is measured: ``birth_date`` is always consistent with it.
REFERENCE_DATE = dt.date(2026, 1, 1)

#: Column name -> DuckDB type, in table order.
CENSUS_COLUMNS: dict[str, str] = {
    "person_id": "BIGINT",
    "name": "VARCHAR",
    "age": "INTEGER",
    "sex": "VARCHAR",
    "race": "VARCHAR",
    "marital_status": "VARCHAR",
    "education": "VARCHAR",
    "zip": "VARCHAR",
    "birth_date": "DATE",
    "native_country": "VARCHAR",
    "occupation": "VARCHAR",
    "income": "INTEGER",
    "hours_per_week": "INTEGER",
}

#: Column name -> role (``identifier``, ``qi``, ``sensitive`` or ``insensitive``), table order.
CENSUS_ROLES: dict[str, str] = {
    "person_id": "identifier",
    "name": "identifier",
    "age": "qi",
    "sex": "qi",
    "race": "qi",
    "marital_status": "qi",
    "education": "qi",
    "zip": "qi",
    "birth_date": "qi",
    "native_country": "qi",
    "occupation": "sensitive",
    "income": "sensitive",
    "hours_per_week": "insensitive",
}

# --------------------------------------------------------------------------------------------
# Distributions. Weights need not sum to 1; they are normalised when the SQL is built.
# --------------------------------------------------------------------------------------------

Choices = Sequence[tuple[str | int, float]]
Bands = Sequence[tuple[int, int, float]]

# Hidden region = first ZIP digit, weighted roughly by US population; the second number is
# how many 3-digit ZIP prefixes the region uses (about 300 in all).
_REGIONS: list[tuple[int, float, int]] = [
    (0, 0.08, 24),  # New England, NJ, PR
    (1, 0.10, 30),  # NY, PA, DE
    (2, 0.10, 30),  # DC, MD, VA, WV, NC, SC
    (3, 0.12, 36),  # FL, GA, AL, TN, MS
    (4, 0.09, 27),  # IN, KY, MI, OH
    (5, 0.05, 15),  # IA, MN, SD, ND, WI, MT
    (6, 0.07, 21),  # IL, MO, KS, NE
    (7, 0.12, 36),  # TX, LA, AR, OK
    (8, 0.08, 24),  # CO, AZ, UT, NM, NV, ID, WY
    (9, 0.19, 57),  # CA, OR, WA, AK, HI
]

# Age pyramid of the Adult data (17-90, mean about 39, long right tail).
_AGE_BANDS: Bands = [
    (17, 19, 4.0),
    (20, 24, 9.5),
    (25, 29, 11.5),
    (30, 34, 12.5),
    (35, 39, 12.5),
    (40, 44, 11.5),
    (45, 49, 10.0),
    (50, 54, 8.0),
    (55, 59, 6.0),
    (60, 64, 5.0),
    (65, 69, 3.5),
    (70, 74, 2.5),
    (75, 79, 1.5),
    (80, 84, 0.9),
    (85, 90, 0.7),
]

_SEX: Choices = [("Male", 0.52), ("Female", 0.48)]

_RACE_DEFAULT: Choices = [
    ("White", 0.854),
    ("Black", 0.096),
    ("Asian-Pac-Islander", 0.031),
    ("Amer-Indian-Eskimo", 0.0096),
    ("Other", 0.0083),
]
_RACE_SOUTHEAST: Choices = [
    ("White", 0.76),
    ("Black", 0.20),
    ("Asian-Pac-Islander", 0.02),
    ("Amer-Indian-Eskimo", 0.006),
    ("Other", 0.01),
]
_RACE_WEST_COAST: Choices = [
    ("White", 0.78),
    ("Black", 0.05),
    ("Asian-Pac-Islander", 0.13),
    ("Amer-Indian-Eskimo", 0.012),
    ("Other", 0.03),
]
_RACE_PLAINS_MOUNTAIN: Choices = [
    ("White", 0.90),
    ("Black", 0.03),
    ("Asian-Pac-Islander", 0.025),
    ("Amer-Indian-Eskimo", 0.03),
    ("Other", 0.015),
]

_MARITAL = [
    "Never-married",
    "Married-civ-spouse",
    "Divorced",
    "Separated",
    "Married-spouse-absent",
    "Widowed",
    "Married-AF-spouse",
]
# (max age of the band, weights in _MARITAL order); the last band has no upper limit.
_MARITAL_BY_AGE: list[tuple[int, list[float]]] = [
    (24, [0.88, 0.09, 0.01, 0.01, 0.008, 0.001, 0.0008]),
    (34, [0.45, 0.42, 0.08, 0.03, 0.015, 0.003, 0.0010]),
    (54, [0.15, 0.58, 0.18, 0.04, 0.015, 0.03, 0.0006]),
    (64, [0.07, 0.62, 0.17, 0.03, 0.01, 0.10, 0.0]),
    (999, [0.05, 0.52, 0.12, 0.01, 0.01, 0.29, 0.0]),
]

# The 16 Adult education levels in order (the position + 1 is Adult's education-num).
_EDUCATION: list[tuple[str, float]] = [
    ("Preschool", 0.002),
    ("1st-4th", 0.005),
    ("5th-6th", 0.010),
    ("7th-8th", 0.020),
    ("9th", 0.016),
    ("10th", 0.029),
    ("11th", 0.036),
    ("12th", 0.013),
    ("HS-grad", 0.323),
    ("Some-college", 0.224),
    ("Assoc-voc", 0.042),
    ("Assoc-acdm", 0.033),
    ("Bachelors", 0.164),
    ("Masters", 0.053),
    ("Prof-school", 0.018),
    ("Doctorate", 0.013),
]
# Highest education level (education-num) reachable at an age: (max age, cap).
_EDUCATION_CAP: list[tuple[int, int]] = [(17, 7), (18, 9), (20, 10), (21, 12), (22, 13), (24, 14)]
# People aged 65+ less often went beyond school: weights of levels <= 12th and >= Bachelors.
_EDUCATION_OLDER_FACTOR = {"12th": 2.0, "Bachelors": 0.7}

_OCCUPATIONS = [
    "Prof-specialty",
    "Craft-repair",
    "Exec-managerial",
    "Adm-clerical",
    "Sales",
    "Other-service",
    "Machine-op-inspct",
    "Transport-moving",
    "Handlers-cleaners",
    "Farming-fishing",
    "Tech-support",
    "Protective-serv",
    "Priv-house-serv",
    "Armed-Forces",
]
# Weights in _OCCUPATIONS order for low (<= 12th), middle (HS-grad .. Assoc) and high
# (Bachelors and above) education.
_OCCUPATION_BY_EDUCATION: dict[str, list[float]] = {
    "low": [0.01, 0.15, 0.02, 0.05, 0.09, 0.22, 0.14, 0.08, 0.12, 0.08, 0.01, 0.01, 0.02, 0.0003],
    "mid": [0.05, 0.16, 0.10, 0.16, 0.12, 0.11, 0.07, 0.06, 0.04, 0.03, 0.04, 0.025, 0.004, 4e-4],
    "high": [0.38, 0.03, 0.26, 0.07, 0.11, 0.03, 0.01, 0.01, 0.005, 0.01, 0.04, 0.015, 1e-3, 3e-4],
}
# Multipliers of the weights above for men and for women.
_OCCUPATION_MALE_FACTOR = [0.9, 1.7, 1.1, 0.5, 1.0, 0.7, 1.2, 1.5, 1.3, 1.4, 1.0, 1.5, 0.2, 1.5]
_OCCUPATION_FEMALE_FACTOR = [1.1, 0.2, 0.8, 1.6, 1.0, 1.3, 0.7, 0.3, 0.6, 0.5, 1.0, 0.4, 4.0, 0.3]
# Median annual income (USD) of each occupation, in _OCCUPATIONS order.
_OCCUPATION_MEDIAN_INCOME = [
    80_000,
    50_000,
    85_000,
    40_000,
    50_000,
    28_000,
    38_000,
    42_000,
    30_000,
    32_000,
    60_000,
    55_000,
    22_000,
    50_000,
]

_HOURS_PRIME_MALE: Bands = [
    (40, 40, 0.48),
    (50, 59, 0.17),
    (41, 49, 0.10),
    (30, 39, 0.08),
    (60, 69, 0.07),
    (20, 29, 0.05),
    (1, 19, 0.03),
    (70, 99, 0.02),
]
_HOURS_PRIME_FEMALE: Bands = [
    (40, 40, 0.47),
    (30, 39, 0.14),
    (20, 29, 0.11),
    (50, 59, 0.10),
    (41, 49, 0.08),
    (1, 19, 0.06),
    (60, 69, 0.03),
    (70, 99, 0.01),
]
_HOURS_YOUNG_OLD: Bands = [
    (40, 40, 0.25),
    (1, 19, 0.25),
    (20, 29, 0.23),
    (30, 39, 0.15),
    (41, 49, 0.05),
    (50, 59, 0.05),
    (60, 69, 0.015),
    (70, 99, 0.005),
]

_US = "United States"
_COUNTRY_WHITE: Choices = [
    (_US, 0.935),
    ("México", 0.012),
    ("Germany", 0.006),
    ("Canada", 0.006),
    ("England", 0.005),
    ("Italy", 0.004),
    ("Poland", 0.004),
    ("Cuba", 0.004),
    ("Portugal", 0.002),
    ("Ireland", 0.002),
    ("France", 0.002),
    ("Greece", 0.002),
    ("Iran", 0.002),
    ("Colombia", 0.002),
    ("El Salvador", 0.002),
    ("Puerto Rico", 0.002),
    ("Guatemala", 0.0015),
    ("Perú", 0.001),
    ("Scotland", 0.001),
    ("Hungary", 0.001),
    ("Serbia", 0.001),
    ("Nicaragua", 0.001),
    ("Ecuador", 0.001),
    ("Dominican Republic", 0.001),
    ("Honduras", 0.0007),
    ("Netherlands", 0.0005),
    ("Türkiye", 0.0005),
    ("Curaçao", 0.0001),
    ("Åland Islands", 0.00002),
]
# White people in the south-west and west (regions 7-9): many more born in Latin America.
_COUNTRY_WHITE_SOUTHWEST: Choices = [
    (_US, 0.88),
    ("México", 0.06),
    ("El Salvador", 0.006),
    ("Guatemala", 0.005),
    ("Canada", 0.005),
    ("Germany", 0.004),
    ("England", 0.004),
    ("Cuba", 0.002),
    ("Honduras", 0.002),
    ("Colombia", 0.002),
    ("Nicaragua", 0.0015),
    ("Perú", 0.0015),
    ("Iran", 0.0015),
    ("Italy", 0.001),
    ("Ecuador", 0.001),
    ("Poland", 0.001),
    ("France", 0.001),
    ("Ireland", 0.001),
    ("Greece", 0.0005),
    ("Portugal", 0.0005),
    ("Türkiye", 0.0003),
    ("Curaçao", 0.00005),
]
_COUNTRY_BLACK: Choices = [
    (_US, 0.90),
    ("Jamaica", 0.025),
    ("Haïti", 0.02),
    ("Nigeria", 0.008),
    ("Dominican Republic", 0.006),
    ("Trinidad and Tobago", 0.006),
    ("Puerto Rico", 0.006),
    ("Côte d’Ivoire", 0.004),  # noqa: RUF001
    ("Ghana", 0.004),
    ("Ethiopia", 0.004),
    ("Cuba", 0.004),
    ("England", 0.002),
    ("Curaçao", 0.0003),
    ("São Tomé and Príncipe", 0.00005),
]
_COUNTRY_ASIAN: Choices = [
    (_US, 0.40),
    ("Philippines", 0.14),
    ("India", 0.10),
    ("China", 0.09),
    ("Việt Nam", 0.07),
    ("South Korea", 0.05),
    ("Japan", 0.04),
    ("Taiwan", 0.03),
    ("Hong Kong", 0.015),
    ("Cambodia", 0.012),
    ("Laos", 0.012),
    ("Thailand", 0.012),
    ("Pakistan", 0.01),
    ("Iran", 0.005),
    ("Bangladesh", 0.005),
    ("Nepal", 0.003),
    ("Samoa", 0.002),
    ("Fiji", 0.002),
]
_COUNTRY_AMER_INDIAN: Choices = [
    (_US, 0.96),
    ("México", 0.02),
    ("Canada", 0.01),
    ("Guatemala", 0.005),
    ("Perú", 0.003),
    ("Ecuador", 0.002),
]
_COUNTRY_OTHER: Choices = [
    (_US, 0.55),
    ("México", 0.20),
    ("El Salvador", 0.04),
    ("Guatemala", 0.03),
    ("Dominican Republic", 0.03),
    ("Colombia", 0.03),
    ("Puerto Rico", 0.03),
    ("Cuba", 0.02),
    ("Honduras", 0.015),
    ("Perú", 0.01),
    ("Ecuador", 0.01),
    ("Nicaragua", 0.01),
    ("Brasil", 0.01),
    ("Venezuela", 0.008),
    ("Bolivia", 0.004),
    ("Paraguay", 0.002),
]

_FIRST_MALE = (  # noqa: SIM905
    "James John Robert Michael William David Richard Joseph Thomas Charles Christopher "
    "Daniel Matthew Anthony Mark Donald Steven Paul Andrew Joshua Kenneth Kevin Brian George "
    "Timothy Ronald Edward Jason Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry "
    "Justin Scott Brandon José Luis Carlos Juan Wei Ahmed Mohammed Andrés Noah Liam"
).split()
_FIRST_FEMALE = (  # noqa: SIM905
    "Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy "
    "Betty Margaret Sandra Ashley Kimberly Emily Donna Michelle Carol Amanda Dorothy Melissa "
    "Deborah Stephanie Rebecca Sharon Laura Cynthia Kathleen Amy Angela Shirley Anna Brenda "
    "Pamela Emma Nicole Helen María Ana Sofía Mei Fatima Zoë Chloé Olivia Ava Renée"
).split()
_LAST = (  # noqa: SIM905
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez "
    "Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson "
    "White Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott "
    "Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter "
    "Roberts Kim Patel Chen Müller O’Brien Núñez Kowalski Schröder"  # noqa: RUF001
).split()

# One salt per random draw; changing one changes that column only.
_SALTS = {
    "region": 101,
    "zip3": 102,
    "zip2": 103,
    "age": 104,
    "sex": 105,
    "race": 106,
    "marital": 107,
    "education": 108,
    "birth": 109,
    "hours": 110,
    "occupation": 111,
    "country": 112,
    "first": 113,
    "last": 114,
    "income1": 115,
    "income2": 116,
}

# --------------------------------------------------------------------------------------------
# SQL builders
# --------------------------------------------------------------------------------------------


def _num(value: float) -> str:
    """Return ``value`` as a SQL number literal."""
    return literal(value)


def _dbl(value: float) -> str:
    """Return ``value`` as a SQL ``DOUBLE`` (so comparisons never go through ``DECIMAL``)."""
    return f"CAST({literal(float(value))} AS DOUBLE)"


def _uniform(salt: int) -> str:
    """Return SQL for a uniform draw in [0, 1) that depends on (``seed``, row number ``i``, salt).

    ``hash(a, b, c)`` combines the per-argument hashes with a final XOR, so two salts would
    differ by a constant bit pattern on every row; the outer ``hash()`` (a 64-bit finaliser)
    removes that dependence. The top 53 bits give an exact double in [0, 1).
    """
    inner = f"hash(seed, i, CAST({_num(salt)} AS BIGINT))"
    return f"CAST(hash({inner}) >> 11 AS DOUBLE) * {_dbl(2.0**-53)}"


def _pick(u: str, choices: Choices) -> str:
    """Return a ``CASE`` that maps uniform column ``u`` to a value drawn from ``choices``.

    The heaviest choices come first so most rows leave the ``CASE`` after one or two tests.
    """
    items = sorted(((v, w) for v, w in choices if w > 0), key=lambda vw: -vw[1])
    total = math.fsum(w for _, w in items)
    parts = ["CASE"]
    acc = 0.0
    for value, weight in items[:-1]:
        acc += weight
        parts.append(f"WHEN {u} < {_dbl(acc / total)} THEN {literal(value)}")
    parts.append(f"ELSE {literal(items[-1][0])} END")
    return " ".join(parts)


def _bands(u: str, bands: Bands) -> str:
    """Return an INTEGER drawn from a mixture of uniform integer ranges (inverse CDF of ``u``)."""
    total = math.fsum(w for _, _, w in bands)
    parts = ["CASE"]
    acc = 0.0
    for n, (lo, hi, weight) in enumerate(bands):
        start, acc = acc, acc + weight
        width = hi - lo + 1
        if width == 1:
            value = literal(lo)
        else:
            scale = width * total / weight
            offset = f"CAST(floor(({u} - {_dbl(start / total)}) * {_dbl(scale)}) AS INTEGER)"
            value = f"least({literal(hi)}, {literal(lo)} + {offset})"
        if n == len(bands) - 1:
            parts.append(f"ELSE {value} END")
        else:
            parts.append(f"WHEN {u} < {_dbl(acc / total)} THEN {value}")
    return f"CAST({' '.join(parts)} AS INTEGER)"


def _switch(cases: Sequence[tuple[str, str]], default: str) -> str:
    """Return ``CASE WHEN cond THEN expr ... ELSE default END``."""
    whens = " ".join(f"WHEN {cond} THEN ({expr})" for cond, expr in cases)
    return f"CASE {whens} ELSE ({default}) END"


def _word(u: str, words: Sequence[str], skew: float = 1.0) -> str:
    """Return one of ``words`` (earlier ones more often when ``skew`` > 1)."""
    items = ", ".join(literal(w) for w in words)
    index = f"CAST(floor(pow({u}, {_dbl(skew)}) * {literal(len(words))}) AS INTEGER) + 1"
    return f"list_extract([{items}]::VARCHAR[], {index})"


def _zipf_index(u: str, n: str) -> str:
    """Return an index in 0 .. n-1 with P(k) ∝ log((k+2)/(k+1)): a heavy head and a long tail."""
    return f"least({n} - 1, CAST(floor(exp({u} * ln({n} + 1))) AS INTEGER) - 1)"


def _census_sql(table: str, rows: int, seed: int) -> str:
    """Return the ``CREATE OR REPLACE TABLE`` statement behind :func:`census`."""
    return f"""
CREATE OR REPLACE TABLE {table} AS
WITH base AS (
  SELECT i, CAST({literal(seed)} AS BIGINT) AS seed
  FROM range(CAST({literal(rows)} AS BIGINT)) AS r(i)
), {_census_ctes()}"""


@functools.cache
def _census_ctes() -> str:
    """Return the part of the statement that does not depend on the arguments.

    It reads ``i`` (the 0-based row number) and ``seed`` from a CTE ``base`` and ends with the
    final ``SELECT``. Built once: the text runs to about 30 kB.
    """
    uniforms = ",\n    ".join(f"{_uniform(salt)} AS u_{key}" for key, salt in _SALTS.items())

    region = _pick("u_region", [(r, w) for r, w, _ in _REGIONS])
    prefixes = "[" + ", ".join(literal(k) for _, _, k in _REGIONS) + "]::INTEGER[]"
    age = _bands("u_age", _AGE_BANDS)
    sex = _pick("u_sex", _SEX)

    # ZIP: region digit, a skewed scrambled prefix inside the region, skewed last two digits.
    zip_k = _zipf_index("u_zip3", f"list_extract({prefixes}, region + 1)")
    zip3 = f"region * 100 + 1 + ({zip_k} * 37 + region * 13) % 99"
    zip_l = _zipf_index("u_zip2", "100")
    zip5 = f"substr(CAST(100000 + zip3 * 100 + ({zip_l} * 73 + zip3) % 100 AS VARCHAR), 2)"

    race = _switch(
        [
            ("region IN (2, 3)", _pick("u_race", _RACE_SOUTHEAST)),
            ("region = 9", _pick("u_race", _RACE_WEST_COAST)),
            ("region IN (5, 8)", _pick("u_race", _RACE_PLAINS_MOUNTAIN)),
        ],
        _pick("u_race", _RACE_DEFAULT),
    )
    marital = _switch(
        [
            (f"age <= {literal(max_age)}", _pick("u_marital", list(zip(_MARITAL, w, strict=True))))
            for max_age, w in _MARITAL_BY_AGE[:-1]
        ],
        _pick("u_marital", list(zip(_MARITAL, _MARITAL_BY_AGE[-1][1], strict=True))),
    )

    levels = [(n + 1, w) for n, (_, w) in enumerate(_EDUCATION)]
    names = [e for e, _ in _EDUCATION]
    low, high = names.index("12th") + 1, names.index("Bachelors") + 1
    low_f, high_f = _EDUCATION_OLDER_FACTOR["12th"], _EDUCATION_OLDER_FACTOR["Bachelors"]
    older = [(n, w * (low_f if n <= low else high_f if n >= high else 1.0)) for n, w in levels]
    edu_raw = _switch([("age >= 65", _pick("u_education", older))], _pick("u_education", levels))
    edu_cap = _switch([(f"age <= {literal(a)}", literal(c)) for a, c in _EDUCATION_CAP], "16")
    edu_num = f"least({edu_raw}, {edu_cap})"
    edu_names = "[" + ", ".join(literal(e) for e, _ in _EDUCATION) + "]::VARCHAR[]"

    # Born after the (age + 1)-th birthday before REFERENCE_DATE and on or before the age-th
    # (REFERENCE_DATE is a 1 January, so every year has the day).
    month_day = f"{literal(REFERENCE_DATE.month)}, {literal(REFERENCE_DATE.day)}"
    last_birthday = f"make_date({literal(REFERENCE_DATE.year)} - age, {month_day})"
    prev_birthday = f"make_date({literal(REFERENCE_DATE.year - 1)} - age, {month_day})"
    birth_date = (
        f"{last_birthday} - CAST(floor(u_birth * ({last_birthday} - {prev_birthday})) AS INTEGER)"
    )

    hours = _switch(
        [
            ("age < 22 OR age >= 65", _bands("u_hours", _HOURS_YOUNG_OLD)),
            ("sex = 'Male'", _bands("u_hours", _HOURS_PRIME_MALE)),
        ],
        _bands("u_hours", _HOURS_PRIME_FEMALE),
    )

    occupation_cases = []
    codes = range(1, len(_OCCUPATIONS) + 1)
    for group, cond in (("low", "edu_num <= 8"), ("mid", "edu_num <= 12"), ("high", "TRUE")):
        weights = _OCCUPATION_BY_EDUCATION[group]
        male = [w * f for w, f in zip(weights, _OCCUPATION_MALE_FACTOR, strict=True)]
        female = [w * f for w, f in zip(weights, _OCCUPATION_FEMALE_FACTOR, strict=True)]
        male_pick = _pick("u_occupation", list(zip(codes, male, strict=True)))
        female_pick = _pick("u_occupation", list(zip(codes, female, strict=True)))
        occupation_cases += [(f"{cond} AND sex = 'Male'", male_pick), (cond, female_pick)]
    occupation = _switch(occupation_cases[:-1], occupation_cases[-1][1])

    country = _switch(
        [
            ("race = 'White' AND region >= 7", _pick("u_country", _COUNTRY_WHITE_SOUTHWEST)),
            ("race = 'White'", _pick("u_country", _COUNTRY_WHITE)),
            ("race = 'Black'", _pick("u_country", _COUNTRY_BLACK)),
            ("race = 'Asian-Pac-Islander'", _pick("u_country", _COUNTRY_ASIAN)),
            ("race = 'Amer-Indian-Eskimo'", _pick("u_country", _COUNTRY_AMER_INDIAN)),
        ],
        _pick("u_country", _COUNTRY_OTHER),
    )

    first = _switch(
        [("sex = 'Male'", _word("u_first", _FIRST_MALE, 1.8))],
        _word("u_first", _FIRST_FEMALE, 1.8),
    )
    name = f"concat({first}, ' ', {_word('u_last', _LAST, 1.6)})"

    occ_names = "[" + ", ".join(literal(o) for o in _OCCUPATIONS) + "]::VARCHAR[]"
    occ_log_median = "[" + ", ".join(_dbl(math.log(m)) for m in _OCCUPATION_MEDIAN_INCOME) + "]"
    # log income = occupation median + education + experience (peaks near 48) + sex + hours
    # + normal noise (Box-Muller), then exp, round to 100 and clamp.
    log_income = (
        f"list_extract({occ_log_median}, occ)"
        f" + {_dbl(0.05)} * (edu_num - 9)"
        f" - {_dbl(0.6)} * pow((age - 48) / {_dbl(25)}, 2)"
        f" - CASE WHEN sex = 'Female' THEN {_dbl(0.15)} ELSE {_dbl(0)} END"
        f" + {_dbl(0.5)} * ln(hours_per_week / {_dbl(40)})"
        f" + {_dbl(0.6)} * sqrt({_dbl(-2)} * ln({_dbl(1)} - u_income1))"
        f" * cos({_dbl(2 * math.pi)} * u_income2)"
    )
    income = (
        f"CAST(least({literal(3_000_000)}, greatest({literal(500)},"
        f" round(exp({log_income}) / {_dbl(100)}) * 100)) AS INTEGER)"
    )

    return f"""draws AS (
  SELECT i,
    {uniforms}
  FROM base
), l1 AS (
  SELECT *, {region} AS region, {age} AS age, {sex} AS sex FROM draws
), l2 AS (
  SELECT *, {zip3} AS zip3, {race} AS race, {marital} AS marital_status,
    {edu_num} AS edu_num, {birth_date} AS birth_date, {hours} AS hours_per_week
  FROM l1
), l3 AS (
  SELECT *, {zip5} AS zip, {occupation} AS occ, {country} AS native_country,
    {name} AS name
  FROM l2
)
SELECT
  CAST(i + 1 AS BIGINT) AS person_id,
  CAST(name AS VARCHAR) AS name,
  CAST(age AS INTEGER) AS age,
  CAST(sex AS VARCHAR) AS sex,
  CAST(race AS VARCHAR) AS race,
  CAST(marital_status AS VARCHAR) AS marital_status,
  CAST(list_extract({edu_names}, edu_num) AS VARCHAR) AS education,
  CAST(zip AS VARCHAR) AS zip,
  CAST(birth_date AS DATE) AS birth_date,
  CAST(native_country AS VARCHAR) AS native_country,
  CAST(list_extract({occ_names}, occ) AS VARCHAR) AS occupation,
  {income} AS income,
  CAST(hours_per_week AS INTEGER) AS hours_per_week
FROM l3
"""


def census(
    con: duckdb.DuckDBPyConnection, name: str = "census", *, rows: int = 50_000, seed: int = 42
) -> str:
    """Create (``CREATE OR REPLACE``) a census-like table of ``rows`` synthetic people.

    The columns, in order, with their roles (:data:`CENSUS_ROLES`) and types
    (:data:`CENSUS_COLUMNS`):

    * identifiers: ``person_id`` BIGINT (1 .. rows), ``name`` VARCHAR ("First Last");
    * quasi-identifiers: ``age`` INTEGER (17-90), ``sex``, ``race``, ``marital_status``,
      ``education`` (the 16 Adult levels), ``zip`` (5 digits), ``birth_date`` DATE (consistent
      with ``age`` at :data:`REFERENCE_DATE`), ``native_country`` (some names are non-ASCII);
    * sensitive: ``occupation`` VARCHAR (14 values), ``income`` INTEGER (annual USD, rounded to
      100);
    * insensitive: ``hours_per_week`` INTEGER (1-99).

    No column holds NULL. The table is a pure function of ``(rows, seed)``: identical on every
    run and for every ``threads`` setting. It is built by one streaming SQL statement.

    Args:
        con: Connection in which to create the table.
        name: Table name (any string; it is quoted, never interpreted as SQL).
        rows: Number of rows, at least 0.
        seed: Seed of every random draw (a 64-bit signed integer).

    Returns:
        ``name``, unchanged.

    Raises:
        InvalidInputError: ``rows`` is negative or ``seed`` is out of the BIGINT range, or either
            is not an integer.
        TypeError: ``name`` is not a non-empty string.
    """
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        msg = f"census(): rows must be a non-negative integer, got {rows!r}."
        raise InvalidInputError(msg)
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        msg = f"census(): seed must be an integer in the BIGINT range, got {seed!r}."
        raise InvalidInputError(msg)
    con.execute(_census_sql(ident(name), rows, seed))
    return name
