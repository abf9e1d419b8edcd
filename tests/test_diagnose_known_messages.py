"""Messages the libraries themselves print for failures whose cause they know, as their sources word them (torch,
torchvision, gloo, flash-attn, vLLM, TensorFlow, xFormers, torch's ROCm build, CANN's operator library). Each excerpt
is built from the public source cited beside it, not from a corpus log; each has a counterpart that must stay quiet or
keep its other reading."""

from __future__ import annotations

import pytest

from .helpers import first_finding as first
from .helpers import quiet, raised

# ---- a GPU older than a feature the launch chose (a lexicon rule with its own remedy) ----

@pytest.mark.parametrize("line", [
    # vllm/config.py's dtype check
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB "
    "GPU has compute capability 7.0. You can use float16 instead by explicitly setting the`dtype` flag in CLI, for "
    "example: --dtype=half.",
    # flash-attn's csrc/flash_attn/flash_api.cpp
    "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
])
def test_a_gpu_older_than_the_feature_the_launch_chose_is_the_launchs_with_its_own_remedy(line):
    found = first(raised(line))
    assert (found.cause, found.actor) == ("torch-build-mismatch", "config")
    assert "float16" in found.remedy and "node is not at fault" in found.remedy


def test_a_message_of_the_same_words_that_is_not_a_failure_or_names_no_gpu_keeps_its_reading():
    # a warning the program goes on from is no failure at all
    quiet(["UserWarning: FlashAttention only supports Ampere GPUs or newer; using the math kernel instead",
           "Epoch 1/3: 100%|##########| 500/500 [00:41<00:00, 12.1it/s, loss=0.412]"])
    # "requires" without a GPU generation is the program's own ValueError
    found = first(raised("ValueError: this model requires at least 2 input features"))
    assert (found.cause, found.actor) == ("program-error", "job")


# ---- a CUDA toolkit older than a package's build needs ----

def test_a_cuda_toolkit_older_than_the_package_needs_is_the_environments():
    # flash-attn's setup.py
    found = first(raised("RuntimeError: FlashAttention is only supported on CUDA 11.6 and above.  Note: make sure "
                         "nvcc has a supported version by running nvcc -V."))
    assert (found.cause, found.actor) == ("torch-build-mismatch", "config")
    assert "toolkit" in found.remedy
    # a driver too old keeps the driver's own reading, and a version the program checks of its own data is its own
    assert first(raised("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please "
                        "update your GPU driver")).cause == "driver-too-old"
    found = first(raised("ValueError: config version 11 or later is required, found 9"))
    assert (found.cause, found.actor) == ("program-error", "job")
    # CUDA's words with a driver in them are the driver's, and a version string the program parses is its own
    for line in ("ValueError: CUDA 12.1 requires NVIDIA driver 530 or later, found 525",
                 "ValueError: model requires cuda version string like '12.1', got 'cu121'"):
        assert first(raised(line)).cause != "torch-build-mismatch", line


# ---- gloo's interface ----

def test_gloo_told_an_interface_the_host_lacks_is_the_launchs_interface_not_a_native_crash():
    # gloo/transport/tcp/device.cc's GLOO_ENFORCE, as an uncaught C++ exception (Horovod) and as torch raises it
    horovod = ["terminate called after throwing an instance of 'gloo::EnforceNotMet'",
               "  what():  [enforce fail at /tmp/pip-install-3dvzdqhs/horovod/third_party/gloo/gloo/transport/tcp/"
               "device.cc:88] ifa != nullptr. Unable to find address for: eth0",
               "Aborted (core dumped)"]
    torch = raised("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != "
                   "nullptr. Unable to find address for: ^lo,docker")
    for log in (horovod, torch):
        found = first(log)
        assert (found.cause, found.actor) == ("network-interface", "config"), log
    # another enforce of gloo's is still the crash it was
    found = first(["terminate called after throwing an instance of 'gloo::EnforceNotMet'",
                   "  what():  [enforce fail at ../gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes.",
                   "Aborted (core dumped)"])
    assert found.cause == "native-crash"


# ---- torch's and torchvision's messages ----

@pytest.mark.parametrize(("line", "cause", "actor"), [
    # torch/distributed/distributed_c10d.py
    ("RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.",
     "program-error", "job"),
    # torchvision/extension.py, _check_cuda_version
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. PyTorch "
     "has CUDA Version=11.8 and torchvision has CUDA Version=12.1. Please reinstall the torchvision that matches your "
     "PyTorch install.", "torch-build-mismatch", "config"),
    # torch/utils/cpp_extension.py
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
     "missing-module", "config"),
    # Lib/multiprocessing/reduction.py's recvfds under torch's file_descriptor sharing strategy
    ("RuntimeError: received 0 items of ancdata", "resource-limit", "config"),
    # aten/src/ATen/native/Convolution.cpp, as torch < 1.8 words it
    ("RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
     "program-error", "job"),
    # TensorFlow's BFC allocator (tensorflow/core/common_runtime/bfc_allocator.cc)
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
     "shape[1024,1024,64] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
     "out-of-memory", "job"),
    # torch's ROCm build (c10/cuda hipified)
    ("RuntimeError: No HIP GPUs are available", "device-mapping", "config"),
    # torch/utils/cpp_extension.py (verify_ninja_availability)
    ("RuntimeError: Ninja is required to load C++ extensions", "missing-module", "config"),
    # aten/src/ATen/MapAllocator.cpp: a tensor's shared-memory segment, whatever errno says
    ("RuntimeError: unable to mmap 1048576 bytes from file </torch_1234_5678_0>: Cannot allocate memory (12)",
     "shm-too-small", "config"),
    # aten's embedding check (TORCH_CHECK on the indices' dtype)
    ("RuntimeError: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
     "but got torch.cuda.FloatTensor instead (while checking arguments for embedding)", "program-error", "job"),
    # Lib/threading.py when the process may start no more threads (ulimit -u, a pids cgroup)
    ("RuntimeError: can't start new thread", "resource-limit", "config"),
    # a network filesystem's server failures (NFS's ESTALE, EREMOTEIO) are the storage's, as EIO's
    ("OSError: [Errno 116] Stale file handle: '/nfs/ckpt/step_100'", "io-error", "service"),
    ("OSError: [Errno 121] Remote I/O error", "io-error", "service"),
    # transformers' auto classes (models/auto/configuration_auto.py)
    ("ValueError: The checkpoint you are trying to load has model type `qwen2_vl` but Transformers does not recognize "
     "this architecture. This could be because of an issue with the checkpoint, or because your version of "
     "Transformers is out of date.", "missing-module", "config"),
    # subprocess's FileNotFoundError for a program the job runs (cpp_extension and Triton call the toolchain)
    ("FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'", "missing-module", "config"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'", "missing-module", "config"),
    # ProcessGroupNCCL's broadcast of the unique id when the store's server (rank 0) went away, not a slow rank 0
    ("torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
     "c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer. This may indicate a "
     "possible application crash on rank 0 or a network set up issue.", "peer-exited", "job"),
    # init_process_group's store-based barrier (torch < 2.0): fewer ranks arrived than the world has
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
     "store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)", "connect-timeout", "service"),
    # torch/distributed/rendezvous.py: a process started without its launcher's variables
    ("ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR "
     "expected, but not set", "connect-timeout", "config"),
    # torch/csrc/utils/tensor_numpy.cpp; NumPy's ABI checks
    ("RuntimeError: Numpy is not available", "missing-module", "config"),
    ("ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 "
     "from PyObject", "torch-build-mismatch", "config"),
    # Inductor's TritonMissing, as BackendCompilerFailed quotes it
    ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError: Cannot find a working triton "
     "installation. More information on installing Triton can be found at https://github.com/openai/triton",
     "missing-module", "config"),
    # bitsandbytes' CUDA set-up
    ("RuntimeError: CUDA Setup failed despite GPU being available. Please run the following command to get more "
     "information: python -m bitsandbytes", "missing-module", "config"),
    # a library older than the model: Transformers' tokenizer registry, vLLM's model registry
    ("ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently imported.", "missing-module",
     "config"),
    ("ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now. Supported architectures: "
     "dict_keys(['LlamaForCausalLM', 'MistralForCausalLM'])", "missing-module", "config"),
    # a GPU older than the launch's choice, as Transformers and flash-attn word it
    ("ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
     "torch-build-mismatch", "config"),
    ("RuntimeError: FlashAttention backward for head dim > 192 requires A100/A800 or H100/H800",
     "torch-build-mismatch", "config"),
    # MapAllocator with EMFILE: the process's open-files limit, not /dev/shm's size
    ("RuntimeError: unable to open shared memory object </torch_1234_5678_0> in read-write mode: Too many open files "
     "(24)", "resource-limit", "config"),
    # the dispatcher: no CUDA kernel for an operator in the installed build (a CPU-only torchvision beside CUDA torch)
    ("NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be "
     "because the operator doesn't exist for this backend, or was omitted during the selective/custom build process "
     "(if using custom build).", "torch-build-mismatch", "config"),
    # aten's checks of the program's own tensors; autograd's anomaly mode
    ("RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and [3, 256, 256] at "
     "entry 1", "program-error", "job"),
    ("RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.", "program-error", "job"),
    # DeepSpeed's op builder without a CUDA toolkit
    ("deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)",
     "missing-module", "config"),
    # c10/cuda/CUDAFunctions.cpp's words for cudaErrorInitializationError
    ("RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.", "no-device", "node"),
    # NumPy's private MemoryError subclass (numpy/core/_exceptions.py)
    ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.73 GiB for an array with shape (500000000,) and "
     "data type float64", "out-of-memory", "job"),
    # a module built for NumPy 1.x under NumPy 2
    ("AttributeError: _ARRAY_API not found", "torch-build-mismatch", "config"),
    ("ImportError: numpy.core.multiarray failed to import", "torch-build-mismatch", "config"),
    # Windows' loader and paging file
    ("OSError: [WinError 126] The specified module could not be found. Error loading \"C:\\venv\\lib\\site-packages"
     "\\torch\\lib\\c10.dll\" or one of its dependencies.", "missing-module", "config"),
    ("OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
     "\"C:\\venv\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll\" or one of its dependencies.",
     "out-of-memory", "config"),
    # TCPStore's libuv default in a build without it
    ("torch.distributed.DistStoreError: use_libuv was requested but PyTorch was build without libuv support",
     "torch-build-mismatch", "config"),
    # c10d's and aten's checks of the program's own calls
    ("RuntimeError: Tensors must be CUDA and dense", "program-error", "job"),
    ("RuntimeError: No backend type associated with device type cpu", "program-error", "job"),
    ("RuntimeError: trying to initialize the default process group twice!", "program-error", "job"),
    ("RuntimeError: The expanded size of the tensor (128) must match the existing size (64) at non-singleton dimension 1.",
     "program-error", "job"),
    ("RuntimeError: Expected 4-dimensional input for 4-dimensional weight [64, 3, 7, 7], but got 3-dimensional input of "
     "size [3, 224, 224] instead", "program-error", "job"),
    ("RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[1, 4, 224, 224] to have 3 channels, but "
     "got 4 channels instead", "program-error", "job"),
    # and torch < 2.1's spelling of the timed-out one
    ("RuntimeError: [1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value store "
     "by key '0', but store->get('0') got error: Socket Timeout", "collective-timeout", "config"),
])
def test_a_message_whose_cause_its_library_knows_names_that_cause(line, cause, actor):
    found = first(raised(line))
    assert (found.cause, found.actor) == (cause, actor)


# ---- the driver's unknown error when torch counts the GPUs ----

CUDA_UNKNOWN = ("/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:138: UserWarning: CUDA initialization: "
                "CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable "
                "CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero. (Triggered "
                "internally at ../c10/cuda/CUDAFunctions.cpp:108.)")


def test_the_drivers_unknown_error_at_device_count_is_the_node_not_the_mapping():
    # c10/cuda/CUDAFunctions.cpp words cudaErrorUnknown so; the job then sees no GPU, which is its consequence
    found = first([CUDA_UNKNOWN, "  return torch._C._cuda_getDeviceCount() > 0",
                   *raised("RuntimeError: No CUDA GPUs are available")])
    assert (found.id, found.cause, found.actor) == ("cuda-init-failed", "no-device", "node")
    assert found.extracted["cuda_message"] == "unknown error"
    # the warning alone, in a job that went on (on the CPU), is no failure
    quiet([CUDA_UNKNOWN, "Epoch 1/3: 100%|##########| 500/500 [00:41<00:00, 12.1it/s, loss=0.412]"])


def test_a_missing_path_stays_the_programs_and_a_store_timeout_stays_a_timeout():
    # ENOENT of a data path is the program's; only a program the job runs names the environment
    found = first(raised("FileNotFoundError: [Errno 2] No such file or directory: 'data/train.jsonl'"))
    assert (found.cause, found.actor) == ("program-error", "job")
    found = first(raised("FileNotFoundError: [Errno 2] No such file or directory: 'configs/gcc.yaml'"))
    assert found.cause == "program-error"


def test_nvlink_that_nvml_says_cannot_carry_p2p_is_the_nodes_hardware_not_nccls_wrapper():
    # NCCL's graph/paths.cc refuses the topology (ncclUnhandledCudaError) unless NCCL_IGNORE_DISABLED_P2P=1
    log = ["gpu3:881:1201 [0] graph/paths.cc:321 NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 0. This "
           "should not be the case given their connectivity, and is probably due to a hardware issue. If you still "
           "want to proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.",
           "gpu3:881:1201 [0] NCCL INFO graph/paths.cc:613 -> 1",
           *raised("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                   "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
                   "version 2.20.5")]
    found = first(log)
    assert (found.cause, found.actor) == ("device-hardware", "node")
    # the same wrapper with a CUDA string of the program's names the program
    found = first([*raised("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                           "cuda error, NCCL version 2.20.5"),
                   "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
                   "Cuda failure 'out of memory'"])
    assert found.cause == "out-of-memory"


def test_the_words_of_a_library_too_old_for_the_model_do_not_take_a_feature_it_refuses():
    # vLLM refusing a combination of features is the launch's choice, not a library to upgrade
    found = first(raised("ValueError: LoRA adapters with tensor parallelism are not supported for now"))
    assert found.cause == "program-error"


@pytest.mark.parametrize(("lines", "cause", "actor"), [
    # TensorRT's logger after trtexec's time, in both orders of its tags; the CUDA string it quotes names the cause
    (["[11/29/2026-12:00:00] [E] [TRT] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of "
      "memory)"], "out-of-memory", "job"),
    (["[11/29/2026-12:00:00] [TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of "
      "memory)"], "out-of-memory", "job"),
    # Go's os/exec words a child killed by a signal in lower case (Ollama's runner)
    (["time=2026-11-29T12:00:00Z level=INFO source=server.go:1 msg=\"loading model\"",
      "Error: llama runner process has terminated: signal: killed"], "out-of-memory", "job"),
    # nvidia-smi's own failures are failures wherever they appear
    (["$ nvidia-smi", "No devices were found"], "no-device", "node"),
    (["root@trainer-0:/workspace# nvidia-smi", "Failed to initialize NVML: Unknown Error"], "no-device", "node"),
    # vLLM's report of a worker process the OOM killer ended (multiproc_worker_utils.py)
    (["INFO 11-29 12:00:00 model_runner.py:1060] Loading model weights took 14.99 GB",
      "ERROR 11-29 12:00:41 multiproc_worker_utils.py:116] Worker VllmWorkerProcess pid 4242 died, exit code: -9"],
     "out-of-memory", "job"),
    # pip's resolver
    (["ERROR: Could not find a version that satisfies the requirement torch==2.1.0+cu121 (from versions: 2.2.0)",
      "ERROR: No matching distribution found for torch==2.1.0+cu121"], "missing-module", "config"),
])
def test_a_tools_own_report_of_a_failure_names_its_cause(lines, cause, actor):
    found = first(lines)
    assert (found.cause, found.actor) == (cause, actor)


def test_tensorrts_warnings_in_either_order_of_its_tags_are_no_failure():
    quiet(["[11/29/2026-12:00:00] [TRT] [W] Unable to determine GPU memory usage: out of memory",
           "[11/29/2026-12:00:00] [W] [TRT] CUDA lazy loading is not enabled.",
           "[11/29/2026-12:00:01] [TRT] [I] Loaded engine size: 512 MiB"])


def test_shared_memory_that_ran_out_stays_shared_memory_when_the_errno_is_not_the_file_limit():
    found = first(raised("RuntimeError: unable to open shared memory object </torch_1234_5678_0> in read-write mode: "
                         "No such file or directory (2)"))
    assert found.cause == "shm-too-small"


def test_a_private_exception_class_is_read_and_a_lowercase_word_before_a_colon_is_not():
    found = first(raised("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.73 GiB for an array"))
    assert found.id == "python:MemoryError"
    quiet(["_note_error: the cache was rebuilt", "step 10 loss 2.0"])


# ---- TensorFlow's and xFormers' words for a GPU whose memory or kernels are not there ----

@pytest.mark.parametrize(("lines", "cause", "actor"), [
    # tensorflow/core/common_runtime/gpu: a host-to-GPU copy whose destination could not be allocated
    (raised("tensorflow.python.framework.errors_impl.InternalError: Failed copying input tensor from /job:localhost/"
            "replica:0/task:0/device:CPU:0 to /job:localhost/replica:0/task:0/device:GPU:0 in order to run "
            "_EagerConst: Dst tensor is not initialized."), "out-of-memory", "job"),
    # tensorflow/stream_executor/cuda: cuBLAS and cuDNN handles TF could not create on a GPU already taken
    (raised("tensorflow.python.framework.errors_impl.InternalError:  Blas GEMM launch failed : a.shape=(32, 784), "
            "b.shape=(784, 10), m=32, n=10, k=784 [Op:MatMul]"), "out-of-memory", "job"),
    (["2026-11-29 12:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:334] Could not create cudnn handle: "
      "CUDNN_STATUS_INTERNAL_ERROR",
      *raised("tensorflow.python.framework.errors_impl.UnknownError:  Failed to get convolution algorithm. This is "
              "probably because cuDNN failed to initialize, so try looking to see if a warning log message was printed "
              "above. [Op:Conv2D]")], "out-of-memory", "job"),
    # xformers/ops/fmha: every attention operator refused because the wheel has no CUDA kernels for this torch
    (raised("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:")
     + ["     query       : shape=(1, 4096, 8, 40) (torch.float16)",
        "`cutlassF` is not supported because:",
        "    xFormers wasn't build with CUDA support",
        "`smallkF` is not supported because:",
        "    max(query.shape[-1] != value.shape[-1]) > 32",
        "    xFormers wasn't build with CUDA support"], "torch-build-mismatch", "config"),
])
def test_tensorflows_and_xformers_words_name_the_memory_or_the_build(lines, cause, actor):
    found = first(lines)
    assert (found.cause, found.actor) == (cause, actor)


def test_xformers_refusing_only_the_inputs_stays_the_programs_and_cudnns_own_internal_error_stays_the_build():
    # the same exception for a dtype the operators do not take is the program's
    found = first(raised("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:")
                  + ["`cutlassF` is not supported because:",
                     "    dtype=torch.float64 (supported: {torch.float32, torch.float16, torch.bfloat16})"])
    assert (found.cause, found.actor) == ("program-error", "job")
    # torch's cuDNN error without TF's handle words keeps the cuDNN table's reading
    found = first(raised("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"))
    assert found.cause == "torch-build-mismatch"


# ---- the Ascend operator library's status codes and AI Core exceptions ----

ACLNN_CALL = ("RuntimeError: expm1:../third_party/op-plugin/op_plugin/ops/opapi/StructKernelNpuOpApi.cpp:1310 NPU "
              "function error: call aclnnExpm1 failed, error code is {code}")
PTA = "[ERROR] 2026-11-29-12:00:00 (PID:4242, Device:0, RankID:0) ERR00100 PTA call acl api failed."


@pytest.mark.parametrize(("code", "cause", "actor"), [
    # aclnnStatus (CANN's "aclnn Return Codes"): the operator packages of the node's CANN, and its environment
    ("561003", "cann-mismatch", "node"),
    ("561112", "cann-mismatch", "node"),
    ("561107", "cann-env-missing", "config"),
])
def test_the_operator_librarys_status_names_the_nodes_cann_or_its_environment(code, cause, actor):
    found = first(raised(ACLNN_CALL.format(code=code)) + [PTA])
    assert (found.cause, found.actor) == (cause, actor)


def test_an_operator_status_that_names_no_actor_is_left_to_its_lines_and_an_ai_core_exception_is_the_kernels():
    # 561103 (a null pointer inside the library) documents no cause: the failure stays unclassified
    found = first(raised(ACLNN_CALL.format(code="561103")) + [PTA])
    assert found.cause == "unclassified"
    # 161002, an argument the operator refuses, is the program's dtype as often as the launch's: the code under it
    # (EZ1001, which the catalog does not list) leaves it to the launch, unclassified
    found = first(raised(ACLNN_CALL.format(code="161002"))
                  + [PTA, "[PID: 4242] 2026-11-29-12:00:00.970.240 AclNN_Parameter_Error(EZ1001): Tensor self not "
                          "implemented for DT_BFLOAT16, should be in dtype support list [DT_FLOAT,DT_FLOAT16,]."])
    assert (found.cause, found.actor) == ("unclassified", "config")
    # a six-digit number after other words is no status
    found = first(raised("ValueError: bad batch at step 561003"))
    assert found.cause == "program-error"
    # CANN's AI Core exception under its generic EE9999: the kernel faulted on its input
    found = first(raised("RuntimeError: The Inner error is reported as above. The process exits for this inner error, "
                         "and the current working operator name is aclnnFlashAttentionScore.")
                  + [PTA, "EE9999: Inner Error!",
                     "EE9999: 2026-11-29-12:00:00.000.000 The error from device(chipId:0, dieId:0), serial number is 5, "
                     "there is an aivec error exception, core id is 12, error code = 0x800000"])
    assert (found.cause, found.actor) == ("device-assert", "job")


# ---- a library built for another torch, and a driver library the linker cannot find ----

@pytest.mark.parametrize(("line", "cause", "actor"), [
    # torch/_library/fake_impl.py when torchvision's compiled operators did not load
    ("RuntimeError: operator torchvision::nms does not exist", "torch-build-mismatch", "config"),
    # a torch submodule older than the library calling it (torch.library.register_fake is torch >= 2.4)
    ("AttributeError: module 'torch.library' has no attribute 'register_fake'", "torch-build-mismatch", "config"),
    # triton/backends/nvidia/driver.py
    ("AssertionError: libcuda.so cannot found!", "missing-module", "config"),
])
def test_a_library_built_for_another_torch_or_a_driver_library_off_the_linker_path_is_the_environment(
        line, cause, actor):
    found = first(raised(line))
    assert (found.cause, found.actor) == (cause, actor)


def test_the_linkers_missing_libcuda_is_the_environment_and_an_attribute_of_the_programs_own_module_is_the_program():
    # a build that ends on the linker's error (Triton's launcher, an extension linked against the driver)
    found = first(["gcc -O3 -shared -fPIC -o cuda_utils.so cuda_utils.c -lcuda",
                   "/usr/bin/ld: cannot find -lcuda: No such file or directory",
                   "collect2: error: ld returned 1 exit status"])
    assert (found.cause, found.actor) == ("missing-module", "config")
    for line in ("AttributeError: module 'torchaudio_utils' has no attribute 'load'",
                 "AttributeError: module 'mymodel' has no attribute 'torch'",
                 "AttributeError: 'Tensor' object has no attribute 'foo'"):
        assert first(raised(line)).cause == "program-error", line


# ---- the kubelet's reasons for an eviction (pkg/kubelet/eviction/helpers.go) ----

@pytest.mark.parametrize(("line", "cause", "actor"), [
    ("  Warning  Evicted  3m  kubelet  Container trainer exceeded its local ephemeral storage limit \"50Gi\". ",
     "disk-full", "config"),
    ("  Warning  Evicted  3m  kubelet  Usage of EmptyDir volume \"cache\" exceeds the limit \"10Gi\". ",
     "disk-full", "config"),
    ("  Warning  Evicted  3m  kubelet  The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, "
     "available: 9Gi. ", "disk-full", "node"),
    ("  Warning  Evicted  3m  kubelet  The node was low on resource: memory. Threshold quantity: 100Mi, available: "
     "88Mi. Container trainer was using 61Gi, request is 8Gi, has larger consumption of memory. ",
     "out-of-memory", "job"),
])
def test_an_eviction_names_the_pods_limit_or_the_nodes_shortage(line, cause, actor):
    found = first(["  Normal   Started    40m   kubelet            Started container trainer", line])
    assert (found.cause, found.actor) == (cause, actor)


def test_a_node_with_no_pressure_and_a_limit_in_the_spec_is_no_eviction():
    quiet(["    Limits:", "      ephemeral-storage:  20Gi",
           "  DiskPressure     False   kubelet has no disk pressure",
           "  MemoryPressure   False   kubelet has sufficient memory available"])


# ---- RDMA memory the locked-memory limit refused ----

@pytest.mark.parametrize("lines", [
    # UCX (openucx/ucx#8229)
    ["[1732881600.123456] [node-1:4242 :0]       ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot "
     "allocate memory", *raised("RuntimeError: UCX could not open the transport")],
    # libfabric's EFA provider (prov/efa), which then aborts the process
    ["Libfabric EFA provider has encountered an internal error:", "", "Libfabric error: (-12) Cannot allocate memory",
     "EFA internal error: (4112) Failure to post internal receive buffers", "", "Your application will now abort()."],
])
def test_rdma_memory_refused_with_enomem_is_the_locked_memory_limit_not_the_hosts_memory(lines):
    found = first(lines)
    assert (found.id, found.cause, found.actor) == ("rdma-memlock", "resource-limit", "config")
    assert "ulimit -l unlimited" in found.remedy


def test_a_verbs_call_that_failed_for_another_reason_stays_the_fabrics():
    found = first(["node1:1:1 [0] include/ibvwrap.h:311 NCCL WARN Call to ibv_create_qp failed",
                   *raised("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                           "system error, NCCL version 2.21.5")])
    assert found.id == "nccl-ib-resources"


# ---- Ray's memory monitor, and a container Kubernetes saw fail ----

def test_rays_memory_monitor_killing_workers_is_out_of_memory_and_its_info_lines_are_quiet():
    # src/ray/raylet/node_manager.cc, in Ray's C++ log format (time, level letter, pid, thread)
    found = first(["(raylet) [2026-11-29 12:00:00,445 E 395 395] (raylet) node_manager.cc:3049: 2 Workers (tasks / "
                   "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
                   "e5d9, IP: 10.0.62.231) over the last time period.",
                   "(raylet) Refer to the documentation on how to address the out of memory issue: "
                   "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html."])
    assert (found.id, found.cause) == ("ray:killed due to memory pressure (OOM)", "out-of-memory")
    quiet(["(raylet) [2026-11-29 12:00:00,445 I 395 395] (raylet) node_manager.cc:412: Raylet started",
           "step 1 loss 2.0"])


def test_a_terminated_container_with_a_non_zero_exit_code_is_a_failure_and_a_completed_one_is_not():
    describe = ["Containers:", "  trainer:", "    State:          Terminated", "      Reason:       Error",
                "      Exit Code:    {code}", "      Started:      Sun, 29 Nov 2026 12:00:00 +0000"]
    found = first([line.format(code=1) for line in describe])
    assert (found.cause, found.actor) == ("unclassified", "job")
    found = first([line.format(code=137) for line in describe])  # 128 + SIGKILL
    assert found.id == "linux:SIGKILL"
    quiet([line.replace("Error", "Completed").format(code=0) for line in describe])


# ---- zsh's and fish's reports of a child a signal ended ----

@pytest.mark.parametrize(("line", "signal_id"), [
    ("zsh: killed     python train.py", "linux:SIGKILL"),
    ("[1]    4242 killed     python train.py", "linux:SIGKILL"),  # a background job's end
    ("zsh: segmentation fault (core dumped)  python train.py", "linux:SIGSEGV"),
    ("zsh: illegal hardware instruction  python -c 'import torch'", "linux:SIGILL"),
    ("fish: Job 1, 'python train.py' terminated by signal SIGKILL (Forced quit)", "linux:SIGKILL"),
])
def test_zsh_and_fish_word_a_dead_child_in_their_own_way(line, signal_id):
    found = first(["Epoch 1:  45%|████▌     | 450/1000 [02:01<02:28,  3.71it/s]", line])
    assert found.id == signal_id


def test_zshs_other_reports_are_no_signal():
    quiet(["zsh: command not found: conda", "step 1 loss 2.0", "step 2 loss 1.9"])
    quiet(["zsh: done       python prepare.py", "step 1 loss 2.0"])


def test_an_npu_wait_that_timed_out_is_a_collective_timeout_under_the_runtimes_generic_codes():
    # cann/runtime's device_error_proc.cc under EE9999, then the stream sync's 507011
    found = first(["[ERROR] DEVICE(1,ffff,python):2026-11-29-12:00:00.000.000 [ascend_stream_manager.cc:241] SyncStream] "
                   "Call runtime aclrtSynchronizeStreamWithTimeout error.",
                   "EE9999: Inner Error!",
                   "EE9999 The error from device(chipId:3, dieId:0), serial number is 1, event wait timeout occurred "
                   "during task execution, stream_id:122, sq_id:122, task_id:790, event_id=73, timeout=1868.",
                   "TraceBack (most recent call last):",
                   "synchronize stream failed, runtime result = 507011"])
    assert (found.cause, found.actor) == ("collective-timeout", "config")


def test_an_api_servers_port_taken_is_the_launchs_port_though_uvicorn_logs_it_and_shuts_down_cleanly():
    # asyncio's create_server, logged by uvicorn at ERROR before its orderly shutdown
    found = first(["INFO:     Started server process [4242]", "INFO:     Waiting for application startup.",
                   "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address "
                   "already in use", "INFO:     Waiting for application shutdown.",
                   "INFO:     Application shutdown complete."])
    assert (found.cause, found.actor) == ("address-in-use", "config")


# ---- the job's configuration refused by what reads it (configuration.yml) ----

@pytest.mark.parametrize("lines", [
    raised("omegaconf.errors.MissingMandatoryValue: Missing mandatory value: model.tokenizer.model"),
    raised("hydra.errors.ConfigCompositionException: Could not override 'trainer.devices'.")
    + ["To append to your config use +trainer.devices=8"],
    raised("yaml.scanner.ScannerError: mapping values are not allowed here")
    + ['  in "ds_config.yaml", line 3, column 10'],
    ["usage: train.py [-h] [--lr LR]", "train.py: error: unrecognized arguments: --local-rank=0"],
    ["usage: torchrun [-h] [--nnodes NNODES]",
     "torchrun: error: the following arguments are required: training_script, training_script_args"],
    ["usage: train.py [-h] [--lr LR]", "train.py: error: argument --lr: invalid float value: '1e-4x'"],
])
def test_a_configuration_or_command_line_that_its_reader_refuses_is_the_launchs(lines):
    found = first(lines)
    assert (found.cause, found.actor) == ("unclassified", "config")


def test_a_parse_error_of_the_programs_data_and_an_attribute_of_its_objects_stay_the_programs():
    assert first(raised("pandas.errors.ParserError: Error tokenizing data. C error: Expected 3 fields in line 5, "
                        "saw 4")).actor == "job"
    found = first(raised("AttributeError: 'NoneType' object has no attribute 'shape'"))
    assert (found.cause, found.actor) == ("program-error", "job")
