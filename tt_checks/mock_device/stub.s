# The one program every mock kernel links: an entry that calls kernel_main, which returns. tt-metal's loader needs
# the relocation section that --emit-relocs produces from the call, and nothing here ever runs.
  .option norelax
  .section .start,"ax",@progbits
  .globl _start
_start:
  call kernel_main
  ret
  .section .text,"ax",@progbits
  .globl kernel_main
kernel_main:
  ret
