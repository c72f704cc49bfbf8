#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
static size_t G = 1ul<<30; static char *S, *D; static int mode; static size_t RB=2048, ROWS=32, PF=2, PIECES=16;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void stream_out(char *d, char *b, size_t n){ for(size_t k=0;k<n;k+=32) _mm256_stream_ps((float*)(d+k),_mm256_load_ps((float*)(b+k))); }
static void *work(void *p){ long id=(long)p; size_t half=G/2; char *s=S+id*half, *d=D+id*half;
  size_t stride=half/ROWS, T=ROWS*RB; char *A=aligned_alloc(64,T), *B=aligned_alloc(64,T);
  size_t ntiles=stride/RB;
  if(mode==0){ for(size_t k=0;k<half;k+=32){ if((k&63)==0) _mm_prefetch(s+k+1024,_MM_HINT_T0); _mm256_stream_ps((float*)(d+k),_mm256_loadu_ps((float*)(s+k)));} }
  else if(mode==1){ // two-phase, prefetch PF rows ahead
    for(size_t t=0;t<ntiles;t++){ size_t off=t*RB; for(size_t r=0;r<ROWS;r++){ if(PF && r+PF<ROWS) for(size_t l=0;l<RB;l+=64) _mm_prefetch(s+(r+PF)*stride+off+l,_MM_HINT_T0); memcpy(A+r*RB,s+r*stride+off,RB);} stream_out(d+t*T,A,T);} }
  else if(mode==2){ // pipelined: copy next tile into B in PIECES pieces between the pieces of A's write-out
    for(size_t r=0;r<ROWS;r++) memcpy(A+r*RB,s+r*stride,RB);
    size_t per=T/PIECES; // bytes of next tile per piece, walking row by row
    for(size_t t=0;t<ntiles;t++){ size_t noff=(t+1)*RB; int has=t+1<ntiles; size_t c=0;
      for(size_t q=0;q<PIECES;q++){ stream_out(d+t*T+q*per,A+q*per,per);
        if(has){ size_t end=c+per; for(;c<end;c+=64){ size_t r=c/RB, o=c%RB; if(PF){ size_t c2=c+PF*64*8; if(c2<T) _mm_prefetch(s+(c2/RB)*stride+noff+c2%RB,_MM_HINT_T0);} memcpy(B+c,s+r*stride+noff+o,64);} } }
      char*x=A;A=B;B=x; } }
  else if(mode==3){ // interleaved fine: per row, 64B read + 64B write
    for(size_t t=0;t<ntiles;t++){ size_t off=t*RB; for(size_t r=0;r<ROWS;r++){ char*q=s+r*stride+off; if(r+PF<ROWS) for(size_t l=0;l<RB;l+=64) _mm_prefetch(s+(r+PF)*stride+off+l,_MM_HINT_T0); stream_out(d+t*T+r*RB,q,RB);} } }
  free(A);free(B); return 0; }
static double run(){ pthread_t t[2]; double best=1e9; for(int rep=0;rep<5;rep++){ double t0=now(); for(long i=0;i<2;i++) pthread_create(&t[i],0,work,(void*)i); for(int i=0;i<2;i++) pthread_join(t[i],0); double e=now()-t0; if(e<best)best=e;} return best*1e3; }
int main(int c,char**v){ S=mmap(0,G,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); D=mmap(0,G,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); madvise(S,G,MADV_HUGEPAGE); madvise(D,G,MADV_HUGEPAGE); memset(S,1,G); memset(D,0,G);
 size_t rows[]={8,32,64}; size_t pfs[]={0,2,8};
 for(int i=0;i<3;i++){ ROWS=rows[i]; for(int m=1;m<=3;m++) for(int j=0;j<3;j++){ if(m!=2 && j==2) continue; PF=pfs[j]; mode=m; double t=run(); mode=0; double cp=run(); printf("rows %zu mode %d pf %zu: %.1f ms (copy %.1f) %.2f\n",ROWS,m,PF,t,cp,cp/t);} }
}
