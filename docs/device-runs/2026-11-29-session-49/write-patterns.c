// Synthetic write patterns at 1 GiB: sequential reads, non-temporal writes
// into R destination rows per thread, interleaved by 64-byte lines or in
// bursts, rows a power of two apart or padded. Session 49 experiment.
// Build: gcc -O2 -mavx2 -fopenmp write-patterns.c -o wp; run: ./wp THREADS.
// Output: write-patterns-16.txt / -2.txt (the device host, 16 and 2 threads).
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static char *big(size_t n){char*p=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);madvise(p,n,MADV_HUGEPAGE);memset(p,1,n);return p;}
#define GIB (1ull<<30)
static inline void nt64(char*d,const char*s){__m256 a=_mm256_loadu_ps((const float*)s),b=_mm256_loadu_ps((const float*)(s+32));_mm256_stream_ps((float*)d,a);_mm256_stream_ps((float*)(d+32),b);}
// Per thread: blocks of R rows of S bytes (row stride S + P), each
// block written B bytes per row visit, rows in turn; reads sequential.
static double run(char*dst,char*src,int T,int R,size_t S,size_t B,size_t P){
  double best=1e9;
  for(int rep=0;rep<4;rep++){
    double t0=now();
    #pragma omp parallel num_threads(T)
    {
      int k=omp_get_thread_num();
      size_t region=GIB/T, blocks=region/(R*S);
      char*d0=dst+(size_t)k*blocks*R*(S+P); const char*s=src+(size_t)k*region;
      for(size_t bl=0;bl<blocks;bl++){
        char*db=d0+bl*R*(S+P);
        for(size_t off=0;off<S;off+=B)
          for(int r=0;r<R;r++){char*d=db+r*(S+P)+off; for(size_t x=0;x<B;x+=64){nt64(d+x,s);s+=64;}}
      }
      _mm_sfence();
    }
    double t=now()-t0; if(rep&&t<best)best=t;
  }
  return best*1e3;
}
int main(int argc,char**argv){
  int T=argc>1?atoi(argv[1]):omp_get_max_threads();
  char*src=big(GIB),*dst=big(GIB+(64ull<<20));
  printf("threads %d\n",T);
  struct {const char*name;int R;size_t S;} C[]={{"nChw8c->NCHW",8,256<<10},{"NHWC->NCHW C=256",256,256<<10},{"(1,3)",128,128<<10},{"NHWC->NCHW C=64",64,1<<20}};
  size_t Bs[]={64,128,256,1024,4096}; size_t Ps[]={0,4160};
  for(int c=0;c<4;c++)for(int pi=0;pi<2;pi++)for(int bi=0;bi<5;bi++){
    size_t B=Bs[bi],P=Ps[pi];
    if(GIB/T<C[c].R*C[c].S)continue;
    double t=run(dst,src,T,C[c].R,C[c].S,B,P);
    double b2=run(dst,src,T,1,GIB/T,4096,0);
    printf("%-17s R=%-4d S=%-5zuK B=%-5zu %-6s %7.2f ms %5.2fx of seq (%6.2f)\n",C[c].name,C[c].R,C[c].S>>10,B,P?"padded":"pow2",t,b2/t,b2);
  }
  return 0;
}
