#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <stdint.h>
static size_t G = 1ul<<30;
static char *S, *D;
static int mode; static size_t RB, ROWS, WB, WROWS;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct {int id; double sink;} arg;
// mode 0: streamed copy; 1: read far rows (ROWS rows, stride G/ROWS... ) RB bytes at a time; 2: NT writes to WROWS rows WB bytes at a time
static void *work(void *p){ arg *a=p; size_t half=G/2; char *s=S+a->id*half, *d=D+a->id*half;
  __m256 acc=_mm256_setzero_ps();
  if(mode==0){ for(size_t k=0;k<half;k+=32){ if((k&63)==0) _mm_prefetch(s+k+1024,_MM_HINT_T0); _mm256_stream_ps((float*)(d+k),_mm256_loadu_ps((float*)(s+k)));} }
  else if(mode==1){ size_t stride=half/ROWS; for(size_t off=0;off<stride;off+=RB) for(size_t r=0;r<ROWS;r++){ char*q=s+r*stride+off; for(size_t k=0;k<RB;k+=32) acc=_mm256_add_ps(acc,_mm256_loadu_ps((float*)(q+k)));} }
  else if(mode==2){ size_t stride=half/WROWS; __m256 v=_mm256_set1_ps(1); for(size_t off=0;off<stride;off+=WB) for(size_t r=0;r<WROWS;r++){ char*q=d+r*stride+off; for(size_t k=0;k<WB;k+=32) _mm256_stream_ps((float*)(q+k),v);} }
  else if(mode==3){ /* memcpy-like: read far rows into scratch, then stream scratch out sequentially */ char *buf=aligned_alloc(64,1<<20); size_t stride=half/ROWS; size_t o=0; for(size_t off=0;off<stride;off+=RB){ for(size_t r=0;r<ROWS;r++) memcpy(buf+r*RB, s+r*stride+off, RB); for(size_t k=0;k<ROWS*RB;k+=32) _mm256_stream_ps((float*)(d+o+k),_mm256_loadu_ps((float*)(buf+k))); o+=ROWS*RB; } free(buf); }
  else if(mode==4){ /* read seq, stream to WROWS far rows */ size_t stride=half/WROWS; size_t i=0; for(size_t off=0;off<stride;off+=WB) for(size_t r=0;r<WROWS;r++){ char*q=d+r*stride+off; for(size_t k=0;k<WB;k+=32){ _mm256_stream_ps((float*)(q+k),_mm256_loadu_ps((float*)(s+i))); i+=32;} } }
  float f[8]; _mm256_storeu_ps(f,acc); a->sink=f[0]; return 0; }
static double run(){ pthread_t t[2]; arg a[2]; double best=1e9; for(int rep=0;rep<5;rep++){ double t0=now(); for(int i=0;i<2;i++){a[i].id=i; pthread_create(&t[i],0,work,&a[i]);} for(int i=0;i<2;i++) pthread_join(t[i],0); double e=now()-t0; if(e<best)best=e;} return best*1e3; }
int main(int c,char**v){ S=mmap(0,G,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); D=mmap(0,G,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); madvise(S,G,MADV_HUGEPAGE); madvise(D,G,MADV_HUGEPAGE); memset(S,1,G); memset(D,0,G);
  mode=0; double cp=run(); printf("streamed copy %.1f ms\n",cp);
  size_t rbs[]={512,2048,8192}; size_t rows[]={8,32,64};
  for(int i=0;i<3;i++) for(int j=0;j<3;j++){ mode=1; RB=rbs[i]; ROWS=rows[j]; double t=run(); mode=0; double c2=run(); printf("read %zu rows x %zu B: %.1f ms (copy %.1f, read/copy %.2f)\n",ROWS,RB,t,c2,c2/t);} 
  size_t wbs[]={64,128,256,1024}; size_t wr[]={32,128,512};
  for(int i=0;i<4;i++) for(int j=0;j<3;j++){ mode=2; WB=wbs[i]; WROWS=wr[j]; double t=run(); mode=0; double c2=run(); printf("NT write %zu rows x %zu B: %.1f ms (copy/%.2f)\n",WROWS,WB,t,c2/t);} 
  for(int i=0;i<3;i++) for(int j=0;j<2;j++){ mode=3; RB=rbs[i]; ROWS=rows[j]; double t=run(); mode=0; double c2=run(); printf("pack %zu rows x %zu B then stream: %.1f ms (copy %.1f; ratio %.2f)\n",ROWS,RB,t,c2,c2/t);} 
  for(int i=0;i<4;i++) for(int j=0;j<3;j++){ mode=4; WB=wbs[i]; WROWS=wr[j]; double t=run(); mode=0; double c2=run(); printf("seq read, NT write %zu rows x %zu B: %.1f ms (ratio %.2f)\n",WROWS,WB,t,c2/t);} 
}
