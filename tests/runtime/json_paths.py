"""Key paths into JSON documents, for tests that change one field of a file at a time."""


def json_paths(doc, prefix=()):
    """Every key path into a JSON document (dict keys and list indices), outermost first."""
    if prefix:
        yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from json_paths(v, prefix + (k,))
