"""Kernel side of the trusted hidden tests: it calls the student's function and reports, nothing more.

This file is not imported by the grader. `grader.pipeline.inject_trusted_checks` sends its source
text into the student's kernel as an extra first cell, which runs before any student code and
calls `install`. Everything the harness uses (numpy, json, base64, builtins, the display
publisher) is captured at that moment, so later monkeypatches by the student (of numpy, of
`sys.modules`, of builtins) do not change how results are reported. The harness makes no
decision: it decodes the inputs the grader chose, calls the function, encodes what came back
(see `wire.py` for the format) and displays it once, under the results MIME type. The verdict is
computed in the grading process. Nothing here is trusted; it only has to work for honest code.

For a check whose function takes PyTorch tensors (`Check.tensors`), the harness imports torch at
install time, passes each NumPy array argument as a tensor and sends each tensor back as a NumPy
array; the wire format and the grading process never see a tensor.
"""


def install(token, mime, fmt, dtypes, publish=None, tensors=False):
    """Return `run(check, function, payload)`, the function the injected hidden-test code calls.

    `publish(data)` displays a MIME bundle; by default, the kernel's display publisher.
    `tensors`: some check of this run passes torch tensors, so import torch now, if it can be.
    """
    import base64
    import builtins
    import hashlib
    import json
    import types

    import numpy
    from IPython import get_ipython

    b64encode, b64decode, dumps, loads, sha256 = (base64.b64encode, base64.b64decode, json.dumps, json.loads,
                                                  hashlib.sha256)
    ndarray, generic, frombuffer, make_dtype = numpy.ndarray, numpy.generic, numpy.frombuffer, numpy.dtype
    array_dtype, array_shape = ndarray.dtype.__get__, ndarray.shape.__get__  # base-class getters:
    array_bytes, array_astype = ndarray.tobytes, ndarray.astype  # subclasses cannot override them
    scalar_dtype, scalar_bytes = generic.dtype.__get__, generic.tobytes
    b = builtins
    isinstance_, type_, str_, int_, float_, complex_ = b.isinstance, b.type, b.str, b.int, b.float, b.complex
    list_, tuple_, dict_, bool_, slice_, exception = b.list, b.tuple, b.dict, b.bool, b.slice, b.Exception
    int_text, float_hex, str_text = int_.__repr__, float_.hex, str_.__str__
    complex_real, complex_imag = complex_.real.__get__, complex_.imag.__get__
    list_copy, tuple_items, dict_items = list_.copy, tuple_.__getitem__, dict_.items
    type_name, type_mro = type_.__dict__["__name__"].__get__, type_.__dict__["__mro__"].__get__
    exec_, function_type, globals_of = b.exec, types.FunctionType, types.FunctionType.__globals__.__get__
    dict_get, dict_set, dict_pop, absent = dict_.get, dict_.__setitem__, dict_.pop, object()
    getattr_, id_, all_, zip_ = b.getattr, b.id, b.all, b.zip
    float64, complex128 = numpy.float64, numpy.complex128
    # For Check.strict_floats (see `strictly`), with NumPy's public names only: its settings API, the
    # file that implements it, NumPy's own folder, and the calls that would change the settings
    # behind NumPy's back (a context variable set or reset, a saved context run, a thread or a fork).
    import contextvars
    import os
    import sys

    errstate, geterr, geterrcall = numpy.errstate, numpy.geterr, numpy.geterrcall
    settings_code = frozenset(f.__code__ for f in (numpy.seterr, numpy.seterrcall, errstate.__enter__,
                                                   errstate.__exit__))
    settings_file = errstate.__enter__.__code__.co_filename
    numpy_folder = os.path.dirname(numpy.__file__) + os.sep
    context_var, context = contextvars.ContextVar, contextvars.Context
    set_profile, get_profile = sys.setprofile, sys.getprofile
    hooks = frozenset(id(f) for f in (sys.setprofile, sys.settrace, getattr(os, "fork", None),
                                      getattr(os, "forkpty", None), getattr(os, "posix_spawn", None))
                      if f is not None)
    # Starting a thread: threading's public Thread.start, which every public way of starting one goes
    # through (concurrent.futures and multiprocessing's thread pools included).
    import threading

    thread_start = threading.Thread.start.__code__
    # For wire.Rng arguments: NumPy's own default_rng and the base-class getters of a generator's state.
    default_rng, generator_class = numpy.random.default_rng, numpy.random.Generator
    bit_generator_of = generator_class.bit_generator.__get__
    state_of = type_(bit_generator_of(default_rng(0))).state.__get__
    made = []  # (generator, seed text) for each Rng argument of the current call, in decoding order
    publish = publish or get_ipython().display_pub.publish
    allowed = frozenset(dtypes)
    missing_module = b.ModuleNotFoundError
    tensor_class = from_numpy = tensor_numpy = tensor_dtype = None
    if tensors:
        try:
            import torch
        except ImportError:  # every call of a tensors check then raises ModuleNotFoundError (as_tensors)
            pass
        else:
            tensor_class, from_numpy, tensor_numpy = torch.Tensor, torch.from_numpy, torch.Tensor.numpy
            tensor_dtype = torch.Tensor.dtype.__get__

    def name_of(kind):
        try:
            return str_text(type_name(kind))[:200]
        except exception:
            return "?"

    def encode_array(value):
        dtype = array_dtype(value)
        if dtype.kind in "fc" and dtype.itemsize > (8 if dtype.kind == "f" else 16):  # extended precision:
            dtype = make_dtype("<f8" if dtype.kind == "f" else "<c16")  # read as float64 / complex128
            value = array_astype(value, dtype)
        code = dtype.str
        if code not in allowed and dtype.byteorder == ">":
            dtype = dtype.newbyteorder("<")
            value, code = array_astype(value, dtype), dtype.str
        if code not in allowed:
            return {"t": "unsupported", "type": "array of dtype " + str_text(str_(dtype))[:100]}
        shape = [int_(n) for n in array_shape(value)]
        data = b64encode(array_bytes(value)).decode("ascii")
        return {"t": "array", "dtype": code, "shape": shape, "data": data}

    def encode_tensor(value):
        try:
            array = tensor_numpy(value, force=True)  # detached, on the CPU, conjugation resolved
        except exception:
            return {"t": "unsupported", "type": "tensor of dtype " + str_text(str_(tensor_dtype(value)))[:100]}
        return encode_array(array)

    def encode(value, depth=0, tensors=False):
        # tensors (Check.tensors): a torch tensor goes as an array, and a NumPy array is not accepted.
        try:
            kind = type_(value)
            if depth > 32:
                return {"t": "unsupported", "type": "deeply nested " + name_of(kind)}
            if value is None:
                return {"t": "none"}
            if kind is bool_:
                return {"t": "bool", "v": value is True}
            if isinstance_(value, generator_class):  # one made for this call goes back as its Rng
                for generator, seed in made:
                    if generator is value:
                        return {"t": "rng", "seed": seed}
            if tensors and tensor_class is not None and isinstance_(value, tensor_class):
                return encode_tensor(value)
            if tensors and isinstance_(value, ndarray):
                return {"t": "unsupported", "type": "numpy.ndarray, not a torch.Tensor"}
            if isinstance_(value, ndarray):
                return encode_array(value)
            if isinstance_(value, generic):
                dtype = scalar_dtype(value)
                if dtype.kind in "fc" and dtype.itemsize > (8 if dtype.kind == "f" else 16):  # extended precision
                    value = (float64 if dtype.kind == "f" else complex128)(value)  # read as float64 / complex128
                    dtype = scalar_dtype(value)
                code = dtype.str
                if code not in allowed:
                    return {"t": "unsupported", "type": name_of(kind)}
                return {"t": "scalar", "dtype": code, "data": b64encode(scalar_bytes(value)).decode("ascii")}
            if isinstance_(value, int_):
                return {"t": "int", "v": int_text(value)}
            if isinstance_(value, float_):
                return {"t": "float", "v": float_hex(value)}
            if isinstance_(value, complex_):
                return {"t": "complex", "re": float_hex(complex_real(value)), "im": float_hex(complex_imag(value))}
            if isinstance_(value, str_):
                return {"t": "str", "v": str_text(value)}
            if isinstance_(value, tuple_):
                items = tuple_items(value, slice_(None))
                return {"t": "tuple", "v": [encode(item, depth + 1, tensors) for item in items]}
            if isinstance_(value, list_):
                return {"t": "list", "v": [encode(item, depth + 1, tensors) for item in list_copy(value)]}
            if isinstance_(value, dict_):
                pairs = []
                for key, item in list_(dict_items(value)):
                    if not isinstance_(key, str_):
                        return {"t": "unsupported", "type": "dict with a " + name_of(type_(key)) + " key"}
                    pairs.append([str_text(key), encode(item, depth + 1, tensors)])
                return {"t": "dict", "v": pairs}
            return {"t": "unsupported", "type": name_of(kind)}
        except exception:
            return {"t": "unsupported", "type": "unreadable value"}

    def decode(obj):
        tag = obj["t"]
        if tag == "none":
            return None
        if tag in ("bool", "str"):
            return obj["v"]
        if tag == "int":
            return int_(obj["v"])
        if tag == "float":
            return float_.fromhex(obj["v"])
        if tag == "complex":
            return complex_(float_.fromhex(obj["re"]), float_.fromhex(obj["im"]))
        if tag == "list":
            return [decode(item) for item in obj["v"]]
        if tag == "tuple":
            return tuple_(decode(item) for item in obj["v"])
        if tag == "dict":
            return {key: decode(item) for key, item in obj["v"]}
        if tag == "rng":
            generator = default_rng(int_(obj["seed"]))
            made.append((generator, obj["seed"]))
            return generator
        data = b64decode(obj["data"])
        if tag == "array":
            return frombuffer(data, dtype=make_dtype(obj["dtype"])).reshape(obj["shape"]).copy()
        return frombuffer(data, dtype=make_dtype(obj["dtype"]))[0]  # "scalar"

    def as_tensors(value):
        # Check.tensors: each NumPy array among the arguments becomes a tensor sharing its memory.
        if from_numpy is None:
            raise missing_module("these hidden tests pass torch tensors, and torch cannot be imported here")
        if isinstance_(value, ndarray):
            return from_numpy(value)
        if isinstance_(value, list_):
            return [as_tensors(item) for item in value]
        if isinstance_(value, tuple_):
            return tuple_(as_tensors(item) for item in value)
        if isinstance_(value, dict_):
            return {key: as_tensors(item) for key, item in dict_items(value)}
        return value

    def rng_state(generator):
        try:
            return encode(state_of(bit_generator_of(generator)))
        except exception:
            return {"t": "unsupported", "type": "unreadable generator state"}

    def raised(error):
        try:
            return {"t": "raised", "types": [name_of(kind) for kind in type_mro(type_(error))][:64]}
        except exception:
            return {"t": "raised", "types": ["?"]}

    def trusted_globals(definitions):
        # The grader's definitions (Check.replace_globals), each made in a scope of its own.
        made = {}
        for name, defined, source in definitions:
            scope = {"np": numpy, "numpy": numpy, "__builtins__": builtins}
            exec_(source, scope)
            made[name] = scope[defined]
        return made

    def swap(namespace, replacements):
        # Put `replacements` into `namespace`; return what was there (`absent` for a missing name).
        previous = {}
        for name, value in dict_items(replacements):
            previous[name] = dict_get(namespace, name, absent)
            if value is absent:
                dict_pop(namespace, name, None)
            else:
                dict_set(namespace, name, value)
        return previous

    def called_by_numpy(frame):
        # Whether the code that called NumPy's settings API (the first frame outside it) is NumPy's own.
        while frame is not None and frame.f_code.co_filename == settings_file:
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(numpy_folder)

    def strictly(function, args, kwargs):
        """Call with floating-point problems raising; changing NumPy's settings meanwhile fails the call.

        A profile function sees every call the function makes, however it reached what it calls (a
        reference saved before the call included): entering `errstate`, `seterr`, `seterrcall`, setting
        or resetting NumPy's context variable, running a saved context, starting a thread or forking
        are refused unless NumPy's own code does them, and so is removing the profile function.
        """
        touched, tampered = [], []  # what the function did; each list's methods called by it go into the other

        def watch(frame, event, arg):
            if frame.f_code is own_code:  # this function's own calls (putting the previous profile back)
                return
            if event == "call":
                if frame.f_code in settings_code and not called_by_numpy(frame.f_back):
                    touched.append("changed NumPy's floating-point error settings")
                elif frame.f_code is thread_start:
                    touched.append("started a thread or process, or removed the grader's watch")
            elif event == "c_call":
                owner = getattr_(arg, "__self__", None)
                if owner is touched or owner is tampered:
                    (tampered if owner is touched else touched).append("tampered with the grader's watch")
                elif id_(arg) in hooks:
                    touched.append("started a thread or process, or removed the grader's watch")
                elif type_(owner) is context_var and "numpy" in str_(owner.name) and not called_by_numpy(frame):
                    touched.append("changed NumPy's floating-point error settings")
                elif type_(owner) is context and not called_by_numpy(frame):
                    touched.append("ran code in another context")

        cells = tuple_(cell.cell_contents for cell in watch.__closure__)
        with errstate(divide="raise", over="raise", invalid="raise"):
            before, callback, previous = geterr(), geterrcall(), get_profile()
            set_profile(watch)
            try:
                returned = function(*args, **kwargs)
            finally:
                watched = get_profile() is watch
                set_profile(previous)
            intact = watched and all_(cell.cell_contents is kept
                                      for cell, kept in zip_(watch.__closure__, cells, strict=True))
            if touched or tampered or not intact or geterr() != before or geterrcall() is not callback:
                reason = (touched + tampered + ["changed NumPy's floating-point error settings"])[0]
                raise b.FloatingPointError("the function " + reason + ", which this exercise does not allow")
        return returned

    own_code = strictly.__code__

    def digest(encoded):
        return sha256(dumps(encoded, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    def run(check, function, payload):
        spec = loads(payload)
        tensors = spec.get("tensors", False)
        strict_floats = spec.get("strict_floats", False)
        replacements = trusted_globals(spec.get("globals", ()))
        # The globals the student's function looks names up in: the notebook's, for a notebook function.
        namespace = globals_of(function) if replacements and isinstance_(function, function_type) else None
        outcomes = []
        for case in spec["cases"]:
            del made[:]
            args = [decode(arg) for arg in case["args"]]  # fresh copies for every call
            kwargs = {key: decode(value) for key, value in case["kwargs"]}
            previous = swap(namespace, replacements) if namespace is not None else None
            originals = tuple_(args)  # what "inputs unchanged" is judged on: a tuple the function cannot rebind
            try:
                if tensors:
                    args, kwargs = as_tensors(args), as_tensors(kwargs)
                    originals = tuple_(args)
                if strict_floats:  # a floating-point warning fails the call instead of reaching stderr
                    returned = strictly(function, args, kwargs)
                else:
                    returned = function(*args, **kwargs)
                result = encode(returned, tensors=tensors)
            except exception as error:
                result = raised(error)
            finally:
                if previous is not None:
                    swap(namespace, previous)
            outcome = {"result": result}
            if spec["keep_args"]:  # each argument's digest (wire.digest): the grader compares it with what it sent
                outcome["args"] = [digest(encode(arg, tensors=tensors)) for arg in originals]
            if made:  # where each generator was left: how much the function drew from it
                outcome["rngs"] = [rng_state(generator) for generator, _ in made]
            outcomes.append(outcome)
        bundle = {"format": fmt, "token": token, "check": check, "cases": outcomes}
        dumps(bundle)  # fails here, in the kernel, rather than in the message layer, if it cannot be sent
        publish({mime: bundle, "text/plain": "<results of " + check + " for the grader>"})

    return run
