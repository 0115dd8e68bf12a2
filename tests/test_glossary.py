"""docs/concepts.md's glossary names the words answers print (review of uxb: "uninformative", "bounds capped", "as run",
"load band" and the arrival patterns were printed with no entry), each as the code prints it."""
import re
from pathlib import Path

from llm_codesign.measure.stats import BAND_NAMES
from llm_codesign.render.intervals import ARRIVAL_TEXT, UNINFORMATIVE, UNINFORMATIVE_TEXT
from llm_codesign.spec.harness import ARRIVALS

GLOSSARY = (Path(__file__).parents[1] / "docs" / "concepts.md").read_text().split("{#glossary}")[1].split("\n## ")[0]
TERMS = re.findall(r"^- \*\*(.+?)\*\*", GLOSSARY, flags=re.M)


def test_glossary_names_the_printed_words():
    for word in ("not predictable here", "bounds capped", "ideal step", "as run", "load band", "arrival"):
        assert any(word in t for t in TERMS), word
    assert UNINFORMATIVE_TEXT.split(":")[0].strip(" (") in GLOSSARY and f"more than {UNINFORMATIVE:g}x" in GLOSSARY
    assert ", ".join(BAND_NAMES[:-1]) + " and " + BAND_NAMES[-1] in GLOSSARY  # 1-4, 5-32 and 33+


def test_glossary_names_every_arrival_pattern_as_the_flag_takes_it():
    arrival = next(t for t in TERMS if t.startswith("arrival"))
    for a in ARRIVALS:
        assert f"`{a}`" in GLOSSARY and a.replace("_", " ") in arrival
    assert set(ARRIVAL_TEXT) == set(ARRIVALS)
