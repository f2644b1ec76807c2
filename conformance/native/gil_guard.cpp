// A tiny extension shaped like the C++ libraries users call from __getitem__
// (pybind11's gil_scoped_release in torch ops): `hold(seconds)` releases the
// GIL in a C++ frame and takes it back in a destructor. A thread that takes it
// back while the interpreter finalizes is ended by CPython <= 3.13 with
// pthread_exit, whose forced unwind through this noexcept destructor calls
// std::terminate: the process aborts. The conformance exit scenarios use it.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <chrono>
#include <thread>

namespace {

struct ReleasedGil {
    PyThreadState *state;
    ReleasedGil() : state(PyEval_SaveThread()) {}
    ~ReleasedGil() { PyEval_RestoreThread(state); }  // implicitly noexcept
};

PyObject *hold(PyObject *, PyObject *arg) {
    double seconds = PyFloat_AsDouble(arg);
    if (seconds < 0 && PyErr_Occurred()) return nullptr;
    {
        ReleasedGil released;
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    }
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"hold", hold, METH_O, "Release the GIL for `seconds` inside a C++ frame."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "gil_guard", nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit_gil_guard() {
    PyObject *created = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
    if (created != nullptr) PyUnstable_Module_SetGIL(created, Py_MOD_GIL_NOT_USED);
#endif
    return created;
}
