"""The record of valid documents (io/known_valid.py): it only ever skips a validation the same document passed
under the same schema, and it is ignored when it is not provably the user's own."""

import hashlib
import os

import pytest
from click.testing import CliRunner

from triage.cli import main
from triage.io import known_valid

from conftest import CLAIMS


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder / "triage" / "validation" / "valid-documents"


def test_a_digest_tells_types_and_keys_apart():
    forms = [{"a": 1}, {"a": 1.0}, {"a": "1"}, {"a": True}, {1: 1}, {"a": [1]}, {"a": {"b": 1}}, {"b": 1}]
    digests = {known_valid.digest("{}", f, "salt") for f in forms}
    assert len(digests) == len(forms)
    assert known_valid.digest("{}", {"a": 1, "b": 2}, "s") == known_valid.digest("{}", {"b": 2, "a": 1}, "s")
    assert known_valid.digest("{}", {"a": 1}, "s") != known_valid.digest('{"type": "object"}', {"a": 1}, "s")
    assert known_valid.digest("{}", {"a": 1}, "s") != known_valid.digest("{}", {"a": 1}, "t")


def test_a_card_changed_after_it_passed_is_validated_again(cache, tmp_path):
    """The valid card is recorded; the same card with a value the schema refuses is refused, addressed, though
    the valid one is known."""
    card = tmp_path / "card.yaml"
    text = (CLAIMS / "kv2x.yaml").read_text()
    card.write_text(text)
    assert CliRunner().invoke(main, ["validate", str(card)]).exit_code == 0
    assert cache.stat().st_size == 32
    card.write_text(text.replace("kv_bytes: 0.5", "kv_bytes: -0.5"))
    res = CliRunner().invoke(main, ["validate", str(card)])
    assert res.exit_code == 1 and "kv_bytes" in res.stderr


def test_a_record_not_provably_the_users_is_ignored(cache, tmp_path):
    """A record others can write (or of the wrong size) is never read: a planted digest does not let a card
    that fails the schema through."""
    bad = tmp_path / "bad.yaml"
    bad.write_text((CLAIMS / "kv2x.yaml").read_text().replace("kv_bytes: 0.5", "kv_bytes: -0.5"))
    from triage.inputs.validation import _validator_salt
    from triage.io.resources import schema_text
    from triage.io.yamlio import load

    planted = known_valid.digest(schema_text("claim"), load(bad.read_text(), str(bad)).data, _validator_salt())
    cache.parent.mkdir(parents=True, mode=0o700)
    cache.write_bytes(planted)
    os.chmod(cache, 0o666)                                    # writable by others: not trusted
    assert known_valid.known(planted) is False
    res = CliRunner().invoke(main, ["validate", str(bad)])
    assert res.exit_code == 1 and "kv_bytes" in res.stderr
    os.chmod(cache, 0o600)
    assert known_valid.known(planted) is False                # the user's own file, but not one triage wrote
    cache.unlink()
    known_valid.remember(planted)
    assert known_valid.known(planted)                         # the same digest, recorded by triage: read
    cache.write_bytes(cache.read_bytes() + planted)           # re-written since: its stamp no longer matches
    assert known_valid.known(planted) is False


def test_a_record_checked_out_of_a_repository_lets_no_bad_card_through(tmp_path):
    """Issue 46, case 1: a checkout that holds .cache/triage/validation/ (the user's files, 0600, folders closed
    to 0700 by triage itself) with a planted digest and even a planted record of it as triage's output, reached
    as a relative XDG_CACHE_HOME or as $HOME: the bad card is refused."""
    import subprocess
    import sys

    from triage.inputs.validation import _validator_salt
    from triage.io.resources import schema_text
    from triage.io.yamlio import load

    checkout = tmp_path / "checkout"
    bad = checkout / "bad.yaml"
    folder = checkout / ".cache" / "triage" / "validation"
    folder.mkdir(parents=True)
    bad.write_text((CLAIMS / "kv2x.yaml").read_text().replace("kv_bytes: 0.5", "kv_bytes: -0.5"))
    planted = known_valid.digest(schema_text("claim"), load(bad.read_text(), "bad.yaml").data, _validator_salt())
    (folder / "valid-documents").write_bytes(planted)
    st = os.lstat(folder / "valid-documents")
    record = checkout / ".cache" / "triage" / "outputs" / hashlib.sha256(
        os.path.realpath(folder / "valid-documents").encode()).hexdigest()     # where triage records what it wrote
    record.parent.mkdir(parents=True)
    record.write_text(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:"
                      f"{st.st_ctime_ns + 1}")                                  # a guess: ctime is not settable
    for env in ({"XDG_CACHE_HOME": ".cache"}, {"XDG_CACHE_HOME": "", "HOME": str(checkout)}):
        proc = subprocess.run([sys.executable, "-m", "triage", "validate", "bad.yaml"], cwd=checkout, text=True,
                              capture_output=True, timeout=120, env={**os.environ, **env})
        assert proc.returncode == 1 and "kv_bytes" in proc.stderr, (env, proc.stderr)


def test_the_record_keeps_the_newest_digests_only(cache):
    for i in range(known_valid.MOST + 10):
        known_valid.remember(i.to_bytes(32, "big"))
    assert cache.stat().st_size == known_valid.MOST * 32
    assert known_valid.known((known_valid.MOST + 9).to_bytes(32, "big"))
    assert not known_valid.known((0).to_bytes(32, "big"))
