// What a path in the plugin search path turned out to be, in words, and the
// one way the loader opens a plugin file before dlopen sees it: without
// blocking, and only when it is a regular file.
//
// dlopen opens its path with a plain, blocking open(): handed a FIFO it waits
// for a writer forever (the import hangs), handed a folder or a device it
// fails with a message that does not say what the path is. So the loader
// opens the file first (O_NONBLOCK: a FIFO opens at once, and so does a
// device), asks fstat on that descriptor what it is, and lets dlopen at the
// path only when it is a regular file.
#pragma once

#include <string>

namespace torchferry {

// "is a symbolic link loop", "does not exist", "cannot be read (permission
// denied)", ...: why `path` could not be opened or inspected, from the errno
// of the failing call. Looks at the path again (lstat/stat) only to choose
// the words, never to decide anything.
std::string DescribePathError(const std::string& path, int error);

// strerror's text for `error`, safe to call from any thread.
std::string ErrnoText(int error);

// "is a FIFO (named pipe)", "is a folder", "is a socket", ... for a st_mode
// that is not a regular file; "" for a regular file.
std::string DescribeNonRegular(unsigned mode);

// A read-only descriptor of a regular file, closed when this object ends.
class RegularFile {
 public:
  // Opens `path` (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) and checks
  // with fstat on the descriptor that it is a regular file. On failure, ok()
  // is false and problem() says what the path is ("is a FIFO (named pipe)",
  // "is a symbolic link loop", ...), without the path itself.
  explicit RegularFile(const std::string& path);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& problem() const { return problem_; }

 private:
  int fd_ = -1;
  std::string problem_;
};

}  // namespace torchferry
