// Every kind of broken plugin file we know of, loaded one by one into a fresh
// Registry: each must be skipped with a reason of its own (one that names the
// file and no other kind produces), the process must survive every one, and
// a good plugin loaded afterwards must still serve its kernel. Run under the
// sanitizer builds, so that "survives" also means "touched no memory it
// should not have". Each kind is tried in a child process, so that one that
// kills the host is reported as such and the others are still tried.
//
// The kinds are the synthetic plugins of tests/plugins, the ones in
// tests/plugins/hardening, and malformed files made here at run time (empty,
// truncated, wrong ELF class, a folder, an executable), and paths that are
// no file at all: a FIFO (a plain open() of it would block forever), a
// socket, a character device, a symbolic link loop and a dangling link.
//
// Prints one line per kind and, last, the summary line
//   broken plugins: N kinds tried, M rejected with their own reason
// which it also writes to $TF_HARDENING_COUNT_FILE when that is set.
// Exit status 0 only when M == N.
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "loader/loader.h"
#include "loader/log.h"

using namespace torchferry;

namespace {

struct Kind {
  std::string name;
  std::string path;
  std::string expected;      // a substring of the reason
  std::string preload = "";  // loaded first into the same registry
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    std::cerr << name << " is not set; run through `meson test`\n";
    std::exit(2);
  }
  return value;
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The reason with every mention of the file taken out, so that two kinds
// compare by what the loader says about them, not by their names.
std::string Stripped(std::string reason, const Kind& kind) {
  for (const std::string& needle : {kind.path, Basename(kind.path)}) {
    for (size_t at; (at = reason.find(needle)) != std::string::npos;) {
      reason.erase(at, needle.size());
    }
  }
  return reason;
}

// Runs `body` in a child process and returns what it wrote; a child that dies
// (a signal, a sanitizer's exit status) is described instead.
template <typename Body>
std::string InChild(const Body& body, bool* died) {
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("pipe");
    std::exit(2);
  }
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string result = body();
    ssize_t unused = ::write(fds[1], result.data(), result.size());
    (void)unused;
    ::close(fds[1]);
    std::_Exit(0);
  }
  ::close(fds[1]);
  std::string result;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
    result.append(buffer, n);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  *died = true;
  if (WIFSIGNALED(status)) {
    return std::string("the process died of signal ") +
           std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ") while loading it";
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "the process exited with status " +
           std::to_string(WEXITSTATUS(status)) +
           " while loading it (a sanitizer report?)";
  }
  *died = false;
  return result;
}

}  // namespace

int main() {
  const std::string synthetic = Env("TF_TEST_SYNTHETIC_DIR");
  const std::string hardening = Env("TF_HARDENING_PLUGIN_DIR");
  const std::string good = synthetic + "/torchferry_good.so";
  auto syn = [&](const std::string& stem) {
    return synthetic + "/torchferry_" + stem + ".so";
  };
  auto own = [&](const std::string& stem) {
    return hardening + "/torchferry_" + stem + ".so";
  };

  // Malformed files, made from the good plugin's bytes.
  char scratch_template[] = "/tmp/torchferry_broken_XXXXXX";
  const char* made = ::mkdtemp(scratch_template);
  if (made == nullptr) {
    std::perror("mkdtemp");
    return 2;
  }
  const std::string scratch = made;
  const std::string elf = ReadFile(good);
  if (elf.size() < 4096 || elf.compare(0, 4,
                                       "\x7f"
                                       "ELF") != 0) {
    std::cerr << good << " is not a usable ELF file\n";
    return 2;
  }
  WriteFile(scratch + "/torchferry_emptyfile.so", "");
  // The ELF and program headers survive, the segments they map do not.
  WriteFile(scratch + "/torchferry_truncated.so", elf.substr(0, 1024));
  std::string wrong_class = elf;
  wrong_class[4] = 1;  // EI_CLASS = ELFCLASS32 on a 64-bit object
  WriteFile(scratch + "/torchferry_wrongclass.so", wrong_class);
  std::string wrong_machine = elf;
  wrong_machine[18] = static_cast<char>(0xb7);  // e_machine = EM_AARCH64
  wrong_machine[19] = 0;
  WriteFile(scratch + "/torchferry_wrongmachine.so", wrong_machine);
  ::mkdir((scratch + "/torchferry_directory.so").c_str(), 0755);
  const std::string executable = Env("TF_HARDENING_EXECUTABLE");
  const std::string fifo = scratch + "/torchferry_fifo.so";
  const std::string sock = scratch + "/torchferry_socket.so";
  const std::string loop = scratch + "/torchferry_loop.so";
  const std::string dangling = scratch + "/torchferry_dangling.so";
  if (::mkfifo(fifo.c_str(), 0600) != 0 ||
      ::symlink("torchferry_loop.so", loop.c_str()) != 0 ||
      ::symlink((scratch + "/absent").c_str(), dangling.c_str()) != 0) {
    std::perror("making the non-file kinds");
    return 2;
  }
  // Bound here and kept open until the end: the children inherit it.
  const int sock_fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", sock.c_str());
  if (sock_fd < 0 || ::bind(sock_fd, reinterpret_cast<sockaddr*>(&address),
                            sizeof address) != 0) {
    std::perror("binding a socket");
    return 2;
  }

  const std::vector<Kind> kinds = {
      // tests/plugins: one flaw each.
      {"noentry", syn("noentry"), "no entry symbol"},
      {"nullentry", syn("nullentry"), "the entry function returned NULL"},
      {"major2", syn("major2"), "ABI major version mismatch"},
      {"smallplugin", syn("smallplugin"), "the ABI 1.0 size"},
      {"smallkernel", syn("smallkernel"), "kernels[0].struct_size is"},
      {"mixedkernelsize", syn("mixedkernelsize"), "kernels[1].struct_size is"},
      {"nullfn", syn("nullfn"), "fn is NULL"},
      {"baddtype", syn("baddtype"), "unknown dtype (code 3, bits 32, lanes 1)"},
      {"badlanes", syn("badlanes"), "unknown dtype (code 2, bits 32, lanes 4)"},
      {"baddevice", syn("baddevice"), "unknown device type 7"},
      {"metadevice", syn("metadevice"), "unknown device type 0"},
      {"dupkernel", syn("dupkernel"), "duplicate kernel"},
      {"initfail", syn("initfail"), "no accelerator found"},
      {"badname", syn("badname"), "invalid plugin name 'Bad Name!'"},
      {"badkind", syn("badkind"), "has kind 7"},
      {"nullkernels", syn("nullkernels"), "but kernels is NULL"},
      {"unknownop", syn("unknownop"), "unknown op 'gelu'"},
      {"notelf", syn("notelf"), "invalid ELF header"},
      {"missingdep", syn("missingdep"), "libtorchferry_test_absent.so.1"},
      {"initmutate", syn("initmutate"), "changed its descriptor during init"},
      // tests/plugins/hardening.
      {"emptyname", own("emptyname"), "invalid plugin name ''"},
      {"longname", own("longname"), "(longer than 63 characters)"},
      {"nullname", own("nullname"), "the plugin name is NULL"},
      {"zerosize", own("zerosize"), "too small to hold even the ABI version"},
      {"hugecount", own("hugecount"), "expected at most 65536"},
      {"hugekernelsize", own("hugekernelsize"),
       "kernels[0].struct_size is 1048576"},
      {"nullop", own("nullop"), "kernels[1].op is NULL"},
      {"longop", own("longop"), "not a string of up to 63 bytes"},
      {"undefsym", own("undefsym"),
       "undefined symbol: tf_hardening_absent_function"},
      {"initnomsg", own("initnomsg"), "(the plugin set no message)"},
      {"badstatus", own("badstatus"), "init of plugin 'badstatus' failed"},
      {"dupname", own("dupname"), "plugin 'good' is already loaded", good},
      {"throwentry", own("throwentry"), "exception escaped the entry function"},
      {"throwinit", own("throwinit"), "exception escaped init"},
      // Malformed files.
      {"emptyfile", scratch + "/torchferry_emptyfile.so", "file too short"},
      {"truncated", scratch + "/torchferry_truncated.so",
       "cannot load the library"},
      {"wrongclass", scratch + "/torchferry_wrongclass.so", "wrong ELF class"},
      {"wrongmachine", scratch + "/torchferry_wrongmachine.so",
       "cannot load the library"},
      {"directory", scratch + "/torchferry_directory.so", "is a folder"},
      {"executable", executable, "cannot dynamically load"},
      // Paths that are no plugin file at all.
      {"fifo", fifo, "is a FIFO (named pipe)"},
      {"socket", sock, "is a socket"},
      {"chardevice", "/dev/null", "is a character device"},
      {"symlinkloop", loop, "is a symbolic link loop"},
      {"dangling", dangling,
       "is a symbolic link to something that does not exist"},
  };

  // Quiet: the loader's warn lines for 45 skips would bury the report.
  SetLogLevel(LogLevel::kOff);
  int clean = 0;
  std::map<std::string, std::string> seen;  // stripped reason -> kind
  std::vector<const Kind*> survivors;
  for (const Kind& kind : kinds) {
    // The child answers "R<reason>" (skipped for that reason) or "P<problem>".
    bool died = false;
    const std::string answer = InChild(
        [&]() -> std::string {
          Registry registry;
          size_t before = 0;
          if (!kind.preload.empty()) {
            if (registry.LoadFile(kind.preload) == nullptr) {
              return "Pcould not preload " + kind.preload;
            }
            before = registry.skipped().size();
          }
          if (registry.LoadFile(kind.path) != nullptr) return "Pit loaded";
          if (registry.skipped().size() != before + 1) {
            return "Pexpected exactly one skip entry";
          }
          return "R" + registry.skipped().back().reason;
        },
        &died);
    // dupname would take the good plugin's name in the final check.
    if (!died && kind.preload.empty()) survivors.push_back(&kind);
    std::string problem;
    std::string reason;
    if (died || answer.empty() || answer[0] != 'R') {
      problem = died || answer.empty() ? answer : answer.substr(1);
    } else {
      reason = answer.substr(1);
      const std::string stripped = Stripped(reason, kind);
      if (reason.find(Basename(kind.path)) == std::string::npos) {
        problem = "the reason does not name the file";
      } else if (reason.find(kind.expected) == std::string::npos) {
        problem = "expected the reason to contain '" + kind.expected + "'";
      } else if (seen.count(stripped) != 0) {
        problem = "same reason as " + seen[stripped];
      } else {
        seen[stripped] = kind.name;
      }
    }
    if (problem.empty()) {
      ++clean;
      std::cout << "ok   " << kind.name << ": " << reason << "\n";
    } else {
      std::cout << "FAIL " << kind.name << ": " << problem
                << (reason.empty() ? "" : "; reason: " + reason) << "\n";
    }
  }

  // The host still works: after every kind that let it live, all in one
  // registry, the good plugin loads and its kernel runs.
  bool died = false;
  const std::string after = InChild(
      [&]() -> std::string {
        Registry registry;
        for (const Kind* kind : survivors) registry.LoadFile(kind->path);
        const Plugin* plugin = registry.LoadFile(good);
        const tf_dtype f32 = {TF_DTYPE_FLOAT, 32, 1};
        const KernelEntry* abs = registry.Find("abs", TF_DEVICE_CPU, f32);
        if (plugin == nullptr || abs == nullptr || abs->plugin != plugin ||
            registry.plugins().size() != 1) {
          return "the good plugin did not load alone or does not serve abs (" +
                 std::to_string(registry.plugins().size()) + " plugins loaded)";
        }
        float x[3] = {-1.5f, 2.0f, -0.25f}, out[3] = {0, 0, 0};
        int64_t shape[1] = {3}, strides[1] = {1};
        tf_tensor views[2] = {};
        for (int i = 0; i < 2; ++i) {
          views[i].data = i == 0 ? x : out;
          views[i].device = {TF_DEVICE_CPU, 0};
          views[i].ndim = 1;
          views[i].dtype = f32;
          views[i].shape = shape;
          views[i].strides = strides;
          views[i].flags = TF_TENSOR_CONTIGUOUS;
        }
        tf_arg input{};
        input.kind = TF_ARG_TENSOR;
        input.value.tensor = &views[0];
        tf_call call{};
        call.struct_size = sizeof(tf_call);
        call.inputs = &input;
        call.num_inputs = 1;
        call.outputs = &views[1];
        call.num_outputs = 1;
        call.host = HostApi();
        ErrorSink sink;
        call.error_sink = &sink;
        const bool right = abs->fn(&call) == TF_OK && out[0] == 1.5f &&
                           out[1] == 2.0f && out[2] == 0.25f;
        return right ? "yes" : "its abs kernel failed";
      },
      &died);
  const bool host_ok = !died && after == "yes";
  std::cout << (host_ok ? "ok   " : "FAIL ")
            << "after every broken plugin, the good plugin still loads and "
               "serves"
            << (host_ok ? "" : ": " + after) << "\n";
  std::remove((scratch + "/torchferry_emptyfile.so").c_str());
  std::remove((scratch + "/torchferry_truncated.so").c_str());
  std::remove((scratch + "/torchferry_wrongclass.so").c_str());
  std::remove((scratch + "/torchferry_wrongmachine.so").c_str());
  std::remove((scratch + "/torchferry_directory.so").c_str());
  ::close(sock_fd);
  for (const std::string& made_here : {fifo, sock, loop, dangling}) {
    std::remove(made_here.c_str());
  }
  std::remove(scratch.c_str());

  const std::string summary =
      "broken plugins: " + std::to_string(kinds.size()) + " kinds tried, " +
      std::to_string(clean) + " rejected with their own reason" +
      (host_ok ? "" : "; the host broke afterwards");
  std::cout << summary << "\n";
  if (const char* count_file = std::getenv("TF_HARDENING_COUNT_FILE")) {
    std::ofstream(count_file) << summary << "\n";
  }
  return clean == static_cast<int>(kinds.size()) && host_ok ? 0 : 1;
}
