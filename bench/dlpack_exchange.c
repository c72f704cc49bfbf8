/* DLPack 1.3 C exchange through bc.Blob.__dlpack_c_exchange_api__, as a
 * C consumer (PyTorch, tvm-ffi) does it: look the table up once on the
 * type, then export (managed_tensor_from_py_object_no_sync) and import
 * (managed_tensor_to_py_object_no_sync) in a loop. Prints ns per
 * export+import beside NumPy's `__dlpack__` + `np.from_dlpack` through
 * Python. Built and run by `make bench-py` against the venv's Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* The table's layout (dlpack.h 1.3); the tensor stays opaque here. */
typedef struct { uint32_t major, minor; } Version;
typedef struct Header { Version version; struct Header *prev_api; } Header;
typedef struct {
  Header header;
  void *managed_tensor_allocator;
  int (*from_py)(void *, void **);
  int (*to_py)(void *, void **);
  void *dltensor_from_py;
  void *current_work_stream;
} ExchangeAPI;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  Py_Initialize();
  PyObject *bc = PyImport_ImportModule("blobcore");
  if (!bc) { PyErr_Print(); return 1; }
  PyObject *blob_type = PyObject_GetAttrString(bc, "Blob");
  PyObject *cap = PyObject_GetAttrString(blob_type, "__dlpack_c_exchange_api__");
  const ExchangeAPI *api = cap ? PyCapsule_GetPointer(cap, "dlpack_exchange_api") : NULL;
  if (!api) { PyErr_Print(); return 1; }
  if (api->header.version.major != 1) { fprintf(stderr, "unexpected DLPack major version\n"); return 1; }
  PyObject *x = PyObject_CallMethod(blob_type, "tensor", "((iii))", 2, 3, 4);
  if (!x) { PyErr_Print(); return 1; }
  const int n = 2000000;
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    for (int i = 0; i < n; i++) {
      void *tensor = NULL, *obj = NULL;
      if (api->from_py(x, &tensor) != 0 || api->to_py(tensor, &obj) != 0) { PyErr_Print(); return 1; }
      Py_DECREF((PyObject *)obj);
    }
    double t = (now() - t0) / n * 1e9;
    if (t < best) best = t;
  }
  /* NumPy's Python-level exchange of an ndarray of the same shape. */
  PyObject *g = PyDict_New();
  PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
  PyObject *r = PyRun_String(
      "import numpy as np, timeit\n"
      "a = np.zeros((2, 3, 4), np.float32)\n"
      "t = min(timeit.repeat('np.from_dlpack(a)', number=200000, repeat=5, globals=globals())) / 200000 * 1e9\n",
      Py_file_input, g, g);
  if (!r) { PyErr_Print(); return 1; }
  double np_ns = PyFloat_AsDouble(PyDict_GetItemString(g, "t"));
  printf("| DLPack C exchange API: export+import of a blob | %8.1f ns | np.from_dlpack(ndarray): %8.1f ns |\n", best, np_ns);
  Py_DECREF(r);
  Py_DECREF(g);
  Py_DECREF(x);
  Py_DECREF(cap);
  Py_DECREF(blob_type);
  Py_DECREF(bc);
  return Py_FinalizeEx() < 0 ? 1 : 0;
}
