import does_not_exist


def test_never():
    assert True
