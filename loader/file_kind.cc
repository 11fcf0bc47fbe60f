#include "loader/file_kind.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace torchferry {

std::string ErrnoText(int error) {
  char buffer[256];
  // The GNU strerror_r returns its message, not an int.
  return ::strerror_r(error, buffer, sizeof buffer);
}

std::string DescribeNonRegular(unsigned mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "is a folder";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "is a socket";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISLNK(mode)) return "is a symbolic link";
  return "is not a regular file";
}

std::string DescribePathError(const std::string& path, int error) {
  struct stat info;
  switch (error) {
    case ELOOP:
      return "is a symbolic link loop (or a chain of more than 40 links)";
    case ENOENT:
      // A link whose target is gone reads ENOENT too; say which it is.
      if (::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
        return "is a symbolic link to something that does not exist";
      }
      return "does not exist";
    case ENOTDIR:
      return "does not exist (a part of the path before the last is not a "
             "folder)";
    case EACCES:
    case EPERM:
      return "cannot be opened (permission denied)";
    case ENAMETOOLONG:
      return "is a name too long for the file system";
    case ENXIO:
      // open() of a socket, or of a device without its driver.
      if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
        return DescribeNonRegular(info.st_mode);
      }
      break;
    default:
      break;
  }
  return "cannot be opened (" + ErrnoText(error) + ")";
}

RegularFile::RegularFile(const std::string& path) {
  const int fd =
      ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    problem_ = DescribePathError(path, errno);
    return;
  }
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    problem_ = DescribePathError(path, errno);
    ::close(fd);
    return;
  }
  if (!S_ISREG(info.st_mode)) {
    problem_ = DescribeNonRegular(info.st_mode);
    ::close(fd);
    return;
  }
  fd_ = fd;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace torchferry
