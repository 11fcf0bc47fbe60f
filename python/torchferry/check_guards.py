"""Guard bytes for the conformance kit: every tensor a kernel receives lives
inside a larger buffer whose other bytes are known, so that a write the
kernel had no right to make (before an output's first element, past its
last, into the gaps of a strided view's storage, anywhere in an input) is
found after the call, with the tensor it hit and the offset.

Tensors that share a storage (an aliased case) share one guarded buffer, so
aliasing survives the move; the bytes a view does not cover but its storage
holds (a slice's neighbours, a transposed view's gaps) are guarded as the
pads around it are."""

import contextlib

# Bytes of canary before and after each buffer: a multiple of every dtype's
# size, so the tensors inside keep their alignment.
PAD = 64
CANARY = 0xA5


def _storage_bytes(tensor):
    import torch

    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())


class _Buffer:
    """One guarded copy of a storage: PAD canary bytes, the storage's bytes,
    PAD canary bytes. `writable` marks the bytes a call may change."""

    def __init__(self, nbytes, device, source=None):
        import torch

        self.bytes = torch.full((PAD + nbytes + PAD,), CANARY, dtype=torch.uint8, device=device)
        if source is not None:
            self.bytes[PAD:PAD + nbytes].copy_(source)
        self.writable = torch.zeros(self.bytes.numel(), dtype=torch.bool, device=device)
        self.views = []  # (name, tensor as the kernel gets it)
        self.allowed = set()  # id() of the views a call may write

    def view(self, like, name, storage_offset):
        """A tensor of `like`'s shape, strides and dtype at element
        `storage_offset` of the original storage."""
        typed = self.bytes.view(like.dtype)
        tensor = typed.as_strided(like.shape, like.stride(), PAD // like.element_size() + storage_offset)
        self.views.append((name, tensor))
        return tensor

    def allow(self, tensor):
        """The bytes `tensor` covers may change."""
        import torch

        self.allowed.add(id(tensor))
        if tensor.numel() == 0:
            return
        size = tensor.element_size()
        elements = torch.arange(self.bytes.numel() // size, device=tensor.device).as_strided(
            tensor.shape, tensor.stride(), tensor.storage_offset())
        starts = (elements.reshape(-1) * size).unsqueeze(1) + torch.arange(size, device=tensor.device)
        self.writable[starts.reshape(-1)] = True

    def snapshot(self):
        self.before = self.bytes.clone()

    def stray_write(self):
        """(name, byte offset, element size) of the first byte changed where
        no write was allowed, relative to the first element of the view it
        is nearest to, or None."""
        changed = ((self.bytes != self.before) & ~self.writable).nonzero()
        if changed.numel() == 0:
            return None
        at = int(changed[0, 0])

        def distance(entry):
            tensor = entry[1]
            first = tensor.storage_offset() * tensor.element_size()
            away = 0 if first <= at < first + _extent(tensor) else min(abs(at - first),
                                                                       abs(at - first - _extent(tensor)))
            # Of views alike (out= the very input), the one written names it.
            return away, id(tensor) not in self.allowed

        name, tensor = min(self.views, key=distance)
        # storage_offset() counts from the buffer's start, PAD included.
        first = tensor.storage_offset() * tensor.element_size()
        return name, tensor, at - first, int(changed.shape[0])


def _extent(tensor):
    """Bytes from a view's first element to the end of its last."""
    if tensor.numel() == 0:
        return 0
    return (1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()))) * tensor.element_size()


def _covers(tensor, offset):
    """Whether byte `offset` (from the first element) is one of the view's."""
    import torch

    size = tensor.element_size()
    elements = torch.arange(_extent(tensor) // size).as_strided(tensor.shape, tensor.stride(), 0)
    return bool((elements == offset // size).any())


def describe(name, tensor, offset, count):
    """'out: 4 bytes past its end (byte offset 4096, element 1024 of a
    1024-element [32, 32] float32 view)'."""
    size = tensor.element_size()
    extent = _extent(tensor)
    if offset < 0:
        where = f"{-offset} bytes before its first element"
    elif offset >= extent:
        where = f"{offset - extent} bytes after its end" if offset > extent else "right after its end"
    elif _covers(tensor, offset):
        where = "inside it"
    else:
        where = "in a gap of its extent (a byte it does not cover)"
    dtype = str(tensor.dtype).replace("torch.", "")
    return (f"{name}: {count} byte(s) written where no write was allowed, the first {where} "
            f"(byte offset {offset}, element offset {offset // size}, of a {list(tensor.shape)} {dtype} "
            f"view with strides {list(tensor.stride())})")


class Guarded:
    """The tensors of one call, moved into guarded buffers."""

    def __init__(self):
        self.buffers = []

    def move(self, args, kwargs, names):
        """(args, kwargs) with every tensor in a guarded buffer; `names`
        are the positional arguments' names."""
        import torch

        by_storage = {}

        def place(tensor, name):
            key = (tensor.device, tensor.untyped_storage().data_ptr())
            buffer = by_storage.get(key)
            if buffer is None:
                storage = _storage_bytes(tensor)
                buffer = _Buffer(storage.numel(), tensor.device, storage)
                by_storage[key] = buffer
                self.buffers.append(buffer)
            return buffer.view(tensor, name, tensor.storage_offset())

        def walk(value, name):
            if isinstance(value, torch.Tensor):
                return place(value, name)
            if isinstance(value, (list, tuple)):
                return type(value)(walk(v, f"{name}[{i}]") for i, v in enumerate(value))
            return value

        args = tuple(walk(a, f"argument {names[i]!r}" if i < len(names) else f"argument {i + 1}")
                     for i, a in enumerate(args))
        kwargs = {k: walk(v, f"argument {k!r}") for k, v in kwargs.items()}
        return args, kwargs

    def allow(self, tensors):
        for buffer in self.buffers:
            for tensor in tensors:
                if tensor.untyped_storage().data_ptr() == buffer.bytes.untyped_storage().data_ptr():
                    buffer.allow(tensor)

    @contextlib.contextmanager
    def outputs(self):
        """Outputs the host allocates (through torch.empty, its route while
        this runs) come from guarded buffers too."""
        import torch
        from torch.overrides import TorchFunctionMode

        import torchferry

        guarded = self

        class Allocate(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func is not torch.empty or len(args) != 1 or set(kwargs) - {"dtype", "device"}:
                    return func(*args, **kwargs)
                made = func(*args, **kwargs)  # torch's own checks and dtype default
                buffer = _Buffer(made.numel() * made.element_size(), made.device)
                index = sum(1 for b in guarded.buffers if b.views and b.views[0][0].startswith("output"))
                tensor = buffer.view(made, f"output {index} (allocated by the host)", 0)
                buffer.allow(tensor)
                buffer.snapshot()
                guarded.buffers.append(buffer)
                return tensor

        before = torchferry.bridge.out_alloc()
        torchferry.bridge.set_out_alloc("torch.empty")
        try:
            with Allocate():
                yield
        finally:
            torchferry.bridge.set_out_alloc(before)

    def snapshot(self):
        for buffer in self.buffers:
            buffer.snapshot()

    def stray_write(self):
        """describe()'s text of the first stray write, or None."""
        for buffer in self.buffers:
            found = buffer.stray_write()
            if found:
                return describe(*found)
        return None
