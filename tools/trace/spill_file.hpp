// The analysis's temporary file: each stream's records go to it in blocks,
// so that the memory of `sluice trace report` stays bounded whatever the
// trace's length, and are read back a block at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::tool {

//! An unlinked temporary file ($TMPDIR, else /tmp) that records go to in blocks.
class spill_file {
 public:
  spill_file();
  ~spill_file();
  spill_file(const spill_file&) = delete;
  spill_file& operator=(const spill_file&) = delete;

  //! Appends n bytes; returns where they begin.
  std::uint64_t append(const void* data, std::size_t n);
  void read(std::uint64_t at, void* data, std::size_t n) const;

 private:
  int fd_ = -1;
  std::uint64_t end_ = 0;
};

//! One stream's records: in the file, a block of `block` records each, the
//! last still in memory until flush().
template <typename R>
class record_log {
 public:
  static constexpr std::size_t block = 1024;

  void push(spill_file& f, const R& r) {
    tail_.push_back(r);
    ++size_;
    if (tail_.size() == block) {
      offsets_.push_back(f.append(tail_.data(), block * sizeof(R)));
      tail_.clear();
    }
  }
  void flush(spill_file& f) {
    if (tail_.empty()) return;
    offsets_.push_back(f.append(tail_.data(), tail_.size() * sizeof(R)));
    std::vector<R>().swap(tail_);
  }
  std::size_t size() const { return size_; }
  //! Block b's records (after flush()).
  void read_block(const spill_file& f, std::size_t b, std::vector<R>& into) const {
    into.resize(std::min(block, size_ - b * block));
    f.read(offsets_[b], into.data(), into.size() * sizeof(R));
  }

 private:
  std::vector<R> tail_;
  std::vector<std::uint64_t> offsets_;
  std::size_t size_ = 0;
};

//! Reads a record_log front to back.
template <typename R>
class log_reader {
 public:
  log_reader(const spill_file& f, const record_log<R>& log) : f_(f), log_(log) {}
  bool next(R& r) {
    if (at_ == log_.size()) return false;
    if (at_ % record_log<R>::block == 0) log_.read_block(f_, at_ / record_log<R>::block, buf_);
    r = buf_[at_++ % record_log<R>::block];
    return true;
  }

 private:
  const spill_file& f_;
  const record_log<R>& log_;
  std::vector<R> buf_;
  std::size_t at_ = 0;
};

}  // namespace sluice::tool
