"""app/issues/templates.py without a database: masks, restore, and the bounded cluster
count (drain3's LRU) that keeps a project's memory flat when messages do not template."""

from __future__ import annotations

from app.issues.templates import FailureTemplates, first_line


def test_masks_make_ids_numbers_dates_and_uuids_one_template() -> None:
    book = FailureTemplates()
    ids = {
        book.add("Error: payment amount does not add up, total price is 375, but paid 299"),
        book.add("Error: payment amount does not add up, total price is 1203, but paid 833"),
    }
    assert len(ids) == 1
    dated = book.add("Error: flight HAT030 not available on date 2024-05-13")
    assert book.template(dated) == "Error: flight <ID> not available on date <TIME>"
    uuid = book.add("quota exceeded for key 0000000a-0000-4000-8000-00000000000b")
    assert book.template(uuid) == "quota exceeded for key <UUID>"


def test_one_word_changes_the_failure() -> None:
    book = FailureTemplates()
    assert book.add("Error: reservation X1 not found") != book.add(
        "Error: reservation X2 is locked"
    )


def test_a_restored_book_matches_as_the_first_did() -> None:
    book = FailureTemplates()
    first = book.add("Timeout after 30 s calling lookup")
    again = FailureTemplates.restore(book.rows())
    assert again.add("Timeout after 45 s calling lookup") == first
    assert again.add("a failure never seen") != first


def test_the_clusters_are_bounded_and_eviction_is_safe() -> None:
    book = FailureTemplates(max_templates=2)
    made = [book.add(m) for m in ("alpha failed", "beta broke down", "gamma fell over now")]
    assert len(book) == 2 and book.template(made[0]) == ""
    assert [i for i, _, _ in book.take_changed()] == made[1:]
    assert len(FailureTemplates.restore(book.rows())) == 2


def test_what_is_mined_is_the_first_line_bounded() -> None:
    assert first_line("\n\n  KeyError: 'x'\nTraceback ...") == "KeyError: 'x'"
    assert len(first_line("x" * 5000)) == 300
