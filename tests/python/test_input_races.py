"""Kernels that release the GIL while another thread writes their inputs.
Like torch's own, such a call may see old or new values, but it may not
crash: a value a kernel checks (an embedding id) is the value it uses. Each
race runs in its own interpreter, since the failure it guards against is a
crash."""

from conftest import run_python


def test_embedding_ids_flipped_by_another_thread():
    """A thread flips 2M ids between 0 and 2**40 while the main thread looks
    them up: every call returns rows of the table or raises IndexError, as
    torch does under the same race; none reads outside the table."""
    r = run_python(
        """
        import threading, torch
        from torchferry import ops
        ids = torch.zeros(1 << 21, dtype=torch.int64)
        table = torch.randn(4, 8)
        stop = False

        def flip():
            while not stop:
                ids.fill_(1 << 40)
                ids.fill_(0)

        t = threading.Thread(target=flip)
        t.start()
        ok = refused = 0
        try:
            for _ in range(60):
                try:
                    out = ops.embedding(ids, table)
                except IndexError as e:
                    assert "out of range" in str(e), e
                    refused += 1
                else:
                    # Every row is row 0: the only id in range ever written.
                    assert torch.equal(out, table[0].expand_as(out)), out
                    ok += 1
        finally:
            stop = True
            t.join()
        print("OK", ok, refused)
        """,
        timeout=600,
    )
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stdout + r.stderr[-3000:]
