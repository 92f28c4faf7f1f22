import pytest

from ragas_trace.judges.masking import MASK, mask

KEY = "sk-proj-Zq8vR2mK7tX4wL9nB3cF6hJ1sD5gA0eYuIoP"


@pytest.mark.parametrize(("text", "secret"), [
    (f"authorization: Bearer {KEY}", KEY[8:]),
    ("Authorization: Basic cGstbGYtMTIzNDpzay1sZi01Njc4", "cGstbGYtMTIzNDpzay1sZi01Njc4"),
    (f"Incorrect API key provided: {KEY[:4]}{'*' * 36}{KEY[-4:]}.", KEY[-4:]),
    ("keys pk-lf-1a2b3c4d-5e6f and sk-lf-9f8e7d6c-5b4a", "1a2b3c4d"),
    ('{"api_key": "0123456789abcdef0123456789abcdef"}', "0123456789abcdef"),
    ("token=ZXhhbXBsZXRva2VudmFsdWUxMjM0", "ZXhhbXBsZXRva2Vu"),
])
def test_credentials_are_masked(text: str, secret: str) -> None:
    masked = mask(text)
    assert secret not in masked and MASK in masked


def test_the_configured_key_is_masked_whatever_its_shape() -> None:
    assert mask("quota exceeded for key my-own-gateway-key-42", "my-own-gateway-key-42") \
        == f"quota exceeded for key {MASK}"
    assert mask("the test key", "test") == "the test key"  # too short to mask by value


def test_ordinary_text_is_left_alone() -> None:
    text = ("Desk-based tasks use a token budget; the key point is risk-free. "
            "The bridge was opened in 1932 (see [2]).")
    assert mask(text) == text
