// SPDX-License-Identifier: LGPL-2.1-or-later
#include "seccomp_bpf.hpp"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "error.hpp"

namespace execaff::preflight {
namespace {

[[noreturn]] void refuse(std::size_t pc, const std::string& why) {
  throw Error(EINVAL, "seccomp program, instruction " + std::to_string(pc) + ": " + why);
}

std::uint32_t load_word(const seccomp_data& data, std::uint32_t offset, std::size_t pc) {
  // seccomp_check_filter: aligned 32-bit loads inside struct seccomp_data.
  if (offset % 4 != 0 || offset + 4 > sizeof data) {
    refuse(pc, "load at offset " + std::to_string(offset) + " is outside seccomp_data");
  }
  std::uint32_t word = 0;
  std::memcpy(&word, reinterpret_cast<const unsigned char*>(&data) + offset, sizeof word);
  return word;
}

}  // namespace

std::uint32_t run_seccomp_bpf(const std::vector<sock_filter>& program, const seccomp_data& data) {
  if (program.empty() || program.size() > BPF_MAXINSNS) {
    throw Error(EINVAL, "seccomp program of " + std::to_string(program.size()) +
                            " instructions (1 to " + std::to_string(BPF_MAXINSNS) + " allowed)");
  }
  std::uint32_t a = 0;
  std::uint32_t x = 0;
  std::uint32_t mem[BPF_MEMWORDS] = {};
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& in = program[pc];
    const std::uint32_t k = in.k;
    const auto jump = [&](bool taken) {
      const std::size_t offset = taken ? in.jt : in.jf;
      if (pc + 1 + offset >= program.size()) refuse(pc, "jump past the end");
      pc += offset;
    };
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS: a = load_word(data, k, pc); break;
      case BPF_LD | BPF_W | BPF_LEN: a = sizeof data; break;
      case BPF_LDX | BPF_W | BPF_LEN: x = sizeof data; break;
      case BPF_LD | BPF_IMM: a = k; break;
      case BPF_LDX | BPF_IMM: x = k; break;
      case BPF_LD | BPF_MEM:
      case BPF_LDX | BPF_MEM:
      case BPF_ST:
      case BPF_STX:
        if (k >= BPF_MEMWORDS) refuse(pc, "scratch memory index " + std::to_string(k));
        if (in.code == (BPF_LD | BPF_MEM)) a = mem[k];
        if (in.code == (BPF_LDX | BPF_MEM)) x = mem[k];
        if (in.code == BPF_ST) mem[k] = a;
        if (in.code == BPF_STX) mem[k] = x;
        break;
      case BPF_MISC | BPF_TAX: x = a; break;
      case BPF_MISC | BPF_TXA: a = x; break;
      case BPF_ALU | BPF_ADD | BPF_K: a += k; break;
      case BPF_ALU | BPF_ADD | BPF_X: a += x; break;
      case BPF_ALU | BPF_SUB | BPF_K: a -= k; break;
      case BPF_ALU | BPF_SUB | BPF_X: a -= x; break;
      case BPF_ALU | BPF_MUL | BPF_K: a *= k; break;
      case BPF_ALU | BPF_MUL | BPF_X: a *= x; break;
      case BPF_ALU | BPF_DIV | BPF_K:
      case BPF_ALU | BPF_DIV | BPF_X:
      case BPF_ALU | BPF_MOD | BPF_K:
      case BPF_ALU | BPF_MOD | BPF_X: {
        const std::uint32_t by = BPF_SRC(in.code) == BPF_K ? k : x;
        if (by == 0) return 0;  // the kernel's interpreter: division by zero returns 0
        a = BPF_OP(in.code) == BPF_DIV ? a / by : a % by;
        break;
      }
      case BPF_ALU | BPF_AND | BPF_K: a &= k; break;
      case BPF_ALU | BPF_AND | BPF_X: a &= x; break;
      case BPF_ALU | BPF_OR | BPF_K: a |= k; break;
      case BPF_ALU | BPF_OR | BPF_X: a |= x; break;
      case BPF_ALU | BPF_XOR | BPF_K: a ^= k; break;
      case BPF_ALU | BPF_XOR | BPF_X: a ^= x; break;
      case BPF_ALU | BPF_LSH | BPF_K: a = k < 32 ? a << k : 0; break;
      case BPF_ALU | BPF_LSH | BPF_X: a = x < 32 ? a << x : 0; break;
      case BPF_ALU | BPF_RSH | BPF_K: a = k < 32 ? a >> k : 0; break;
      case BPF_ALU | BPF_RSH | BPF_X: a = x < 32 ? a >> x : 0; break;
      case BPF_ALU | BPF_NEG: a = 0u - a; break;
      case BPF_JMP | BPF_JA:
        if (pc + 1 + k >= program.size()) refuse(pc, "jump past the end");
        pc += k;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K: jump(a == k); break;
      case BPF_JMP | BPF_JEQ | BPF_X: jump(a == x); break;
      case BPF_JMP | BPF_JGT | BPF_K: jump(a > k); break;
      case BPF_JMP | BPF_JGT | BPF_X: jump(a > x); break;
      case BPF_JMP | BPF_JGE | BPF_K: jump(a >= k); break;
      case BPF_JMP | BPF_JGE | BPF_X: jump(a >= x); break;
      case BPF_JMP | BPF_JSET | BPF_K: jump((a & k) != 0); break;
      case BPF_JMP | BPF_JSET | BPF_X: jump((a & x) != 0); break;
      case BPF_RET | BPF_K: return k;
      case BPF_RET | BPF_A: return a;
      default: refuse(pc, "opcode " + std::to_string(in.code) + " is not allowed in seccomp");
    }
  }
  refuse(program.size() - 1, "the program does not end in a return");
}

}  // namespace execaff::preflight
