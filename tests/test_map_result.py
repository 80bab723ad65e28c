"""A map's ``output`` reads ``result``: the outputs of its items that completed, in item
order, each the record its body's ``end`` gives (issue 12 item 5). How the checker
types it; tests/store/test_semantics.py runs it on the engine, the test kit and stores."""

from __future__ import annotations

from wflang.compiler.check import check
from wflang.dsl.parser import parse

HEAD = """\
workflow gather version 1

type Parcel { id: string, kg: decimal }

type Label { parcel_id: string, url: string? }

type Weighed { parcel_id: string, kg: decimal }

input { parcels: list[Parcel] }

context { last_url: string?, labels: list[Label] = [], weighed: list[Weighed] = [], n: int = 0, first: string = "" }

output { n: int }

service labels.create(id: string) -> { url: string }

start labels

map labels over input.parcels as parcel {
    tolerate 1
    choice known {
        when parcel.kg > 30 -> too_heavy
        else -> print_label
    }
    end too_heavy: failed
    task print_label: service labels.create {
        args { id: parcel.id }
        output { last_url: result.url }
        next printed
    }
"""

TAIL = """
    next done
}

end done: completed {
    output { n: context.n }
}
"""


def problems(body: str) -> list[tuple[str, str]]:
    """The type findings (WF301, WF302, WF310, WF311) of the workflow with this body end."""
    result = check([parse(HEAD + body + TAIL, "gather.wf")])
    typing = ("WF301", "WF302", "WF310", "WF311")
    return [(d.code, d.message) for d in result.diagnostics if d.code in typing]


def test_result_is_the_list_of_the_items_outputs() -> None:
    assert (
        problems(
            "    end printed: completed { output { parcel_id: parcel.id, url: context.last_url } }\n"
            "    output { labels: result, n: len(result), first: result[0].parcel_id }\n"
        )
        == []
    )


def test_an_items_output_has_the_fields_its_end_gives() -> None:
    assert problems(
        "    end printed: completed { output { parcel_id: parcel.id } }\n"
        "    output { first: result[0].id }\n"
    ) == [("WF310", "item of labels has no field 'id'")]


def test_a_field_is_typed_by_what_the_end_gives() -> None:
    assert problems(
        "    end printed: completed { output { parcel_id: parcel.id, kg: parcel.kg } }\n"
        "    output { n: result[0].kg }\n"
    ) == [("WF301", "'n' must be int, not decimal")]


def test_a_field_not_every_completed_end_gives_may_be_null() -> None:
    assert (
        problems(
            "    choice light {\n"
            "        when parcel.kg < 1 -> letter\n"
            "        else -> printed\n"
            "    }\n"
            "    end letter: completed { output { parcel_id: parcel.id } }\n"
            "    end printed: completed { output { parcel_id: parcel.id, kg: parcel.kg } }\n"
            "    output { weighed: result }\n"
        ).count(("WF301", "'weighed' must be list[Weighed], not list[item of labels]"))
        == 1
    )


def test_an_items_output_fits_a_declared_record_only_with_its_fields() -> None:
    assert problems(
        "    end printed: completed { output { parcel_id: parcel.id, kg: parcel.kg } }\n"
        "    output { labels: result }\n"  # 'kg' is not a field of Label
    ) == [("WF301", "'labels' must be list[Label], not list[item of labels]")]
    assert (
        problems(  # a missing optional field reads as null: it fits
            "    end printed: completed { output { parcel_id: parcel.id } }\n"
            "    output { labels: result }\n"
        )
        == []
    )


def test_an_end_in_a_map_body_names_the_items_fields_not_the_workflows() -> None:
    assert problems(
        "    end printed: completed { output { anything: parcel.weight } }\n"
        "    output { n: len(result) }\n"
    ) == [("WF310", "Parcel has no field 'weight'")]


def test_ends_that_give_a_field_different_types_are_reported() -> None:
    """Was: the field's type became unknown, so ``first: string`` took an int and the
    instance completed with an int in a string field."""
    assert problems(
        "    choice light {\n"
        "        when parcel.kg < 1 -> letter\n"
        "        else -> printed\n"
        "    }\n"
        "    end printed: completed { output { parcel_id: parcel.id } }\n"
        "    end letter: completed { output { parcel_id: 7 } }\n"
        "    output { first: result[0].parcel_id }\n"
    ) == [("WF301", "every item of map 'labels' must give 'parcel_id' as string, not int")]
    assert (
        problems(  # int and decimal, a value and null: a common type, no finding
            "    choice light {\n"
            "        when parcel.kg < 1 -> letter\n"
            "        else -> printed\n"
            "    }\n"
            "    end letter: completed { output { kg: 1, parcel_id: null } }\n"
            "    end printed: completed { output { kg: parcel.kg, parcel_id: parcel.id } }\n"
            "    output { weighed: [] }\n"
        )
        == []
    )
