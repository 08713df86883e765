"""Splitting identifiers into words: what every search and selection does to each word of each candidate."""

from cortex_tui.core import text


def test_a_name_is_split_once_and_each_caller_gets_its_own_list():
    name = "getUserByIDForIdentifierPartsTest"
    before = text._identifier_parts.cache_info()
    first = text.split_identifier(name)
    first.append("changed by a caller")
    again = text.split_identifier(name)
    after = text._identifier_parts.cache_info()
    assert again == ["get", "user", "by", "id", "for", "identifier", "parts", "test"]
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1), "the second split is the kept one"
    assert text.split_identifier("parse_config") == ["parse", "config"] and text.split_identifier("_") == []
