"""The 100 AI-Feynman equations (Udrescu & Tegmark 2020): public benchmark metadata.

One line per equation: ``id;formula;name lo hi,name lo hi,...`` (formula strings and sampling ranges as
in the benchmark's ``FeynmanEquations.csv``; the Excel-damaged ``#NAME?`` entries of some copies are the
real formulas here).
"""
FEYNMAN_TABLE = """\
I.6.2a;exp(-theta**2/2)/sqrt(2*pi);theta 1 3
I.6.2;exp(-(theta/sigma)**2/2)/(sqrt(2*pi)*sigma);sigma 1 3,theta 1 3
I.6.2b;exp(-((theta-theta1)/sigma)**2/2)/(sqrt(2*pi)*sigma);sigma 1 3,theta 1 3,theta1 1 3
I.8.14;sqrt((x2-x1)**2+(y2-y1)**2);x1 1 5,x2 1 5,y1 1 5,y2 1 5
I.9.18;G*m1*m2/((x2-x1)**2+(y2-y1)**2+(z2-z1)**2);m1 1 2,m2 1 2,G 1 2,x1 3 4,x2 1 2,y1 3 4,y2 1 2,z1 3 4,z2 1 2
I.10.7;m_0/sqrt(1-v**2/c**2);m_0 1 5,v 1 2,c 3 10
I.11.19;x1*y1+x2*y2+x3*y3;x1 1 5,x2 1 5,x3 1 5,y1 1 5,y2 1 5,y3 1 5
I.12.1;mu*Nn;mu 1 5,Nn 1 5
I.12.2;q1*q2*r/(4*pi*epsilon*r**3);q1 1 5,q2 1 5,epsilon 1 5,r 1 5
I.12.4;q1*r/(4*pi*epsilon*r**3);q1 1 5,epsilon 1 5,r 1 5
I.12.5;q2*Ef;q2 1 5,Ef 1 5
I.12.11;q*(Ef+B*v*sin(theta));q 1 5,Ef 1 5,B 1 5,v 1 5,theta 1 5
I.13.4;1/2*m*(v**2+u**2+w**2);m 1 5,v 1 5,u 1 5,w 1 5
I.13.12;G*m1*m2*(1/r2-1/r1);m1 1 5,m2 1 5,r1 1 5,r2 1 5,G 1 5
I.14.3;m*g*z;m 1 5,g 1 5,z 1 5
I.14.4;1/2*k_spring*x**2;k_spring 1 5,x 1 5
I.15.3x;(x-u*t)/sqrt(1-u**2/c**2);x 5 10,u 1 2,c 3 20,t 1 2
I.15.3t;(t-u*x/c**2)/sqrt(1-u**2/c**2);x 1 5,c 3 10,u 1 2,t 1 5
I.15.1;m_0*v/sqrt(1-v**2/c**2);m_0 1 5,v 1 2,c 3 10
I.16.6;(u+v)/(1+u*v/c**2);c 1 5,v 1 5,u 1 5
I.18.4;(m1*r1+m2*r2)/(m1+m2);m1 1 5,m2 1 5,r1 1 5,r2 1 5
I.18.12;r*F*sin(theta);r 1 5,F 1 5,theta 0 5
I.18.14;m*r*v*sin(theta);m 1 5,r 1 5,v 1 5,theta 1 5
I.24.6;1/2*m*(omega**2+omega_0**2)*1/2*x**2;m 1 3,omega 1 3,omega_0 1 3,x 1 3
I.25.13;q/C;q 1 5,C 1 5
I.26.2;arcsin(n*sin(theta2));n 0 1,theta2 1 5
I.27.6;1/(1/d1+n/d2);d1 1 5,d2 1 5,n 1 5
I.29.4;omega/c;omega 1 10,c 1 10
I.29.16;sqrt(x1**2+x2**2-2*x1*x2*cos(theta1-theta2));x1 1 5,x2 1 5,theta1 1 5,theta2 1 5
I.30.3;Int_0*sin(n*theta/2)**2/sin(theta/2)**2;Int_0 1 5,theta 1 5,n 1 5
I.30.5;arcsin(lambd/(n*d));lambd 1 2,d 2 5,n 1 5
I.32.5;q**2*a**2/(6*pi*epsilon*c**3);q 1 5,a 1 5,epsilon 1 5,c 1 5
I.32.17;(1/2*epsilon*c*Ef**2)*(8*pi*r**2/3)*(omega**4/(omega**2-omega_0**2)**2);epsilon 1 2,c 1 2,Ef 1 2,r 1 2,omega 1 2,omega_0 3 5
I.34.8;q*v*B/p;q 1 5,v 1 5,B 1 5,p 1 5
I.34.1;omega_0/(1-v/c);c 3 10,v 1 2,omega_0 1 5
I.34.14;(1+v/c)/sqrt(1-v**2/c**2)*omega_0;c 3 10,v 1 2,omega_0 1 5
I.34.27;(h/(2*pi))*omega;omega 1 5,h 1 5
I.37.4;I1+I2+2*sqrt(I1*I2)*cos(delta);I1 1 5,I2 1 5,delta 1 5
I.38.12;4*pi*epsilon*(h/(2*pi))**2/(m*q**2);m 1 5,q 1 5,h 1 5,epsilon 1 5
I.39.1;3/2*pr*V;pr 1 5,V 1 5
I.39.11;1/(gamma-1)*pr*V;gamma 2 5,pr 1 5,V 1 5
I.39.22;n*kb*T/V;n 1 5,T 1 5,V 1 5,kb 1 5
I.40.1;n_0*exp(-m*g*x/(kb*T));n_0 1 5,m 1 5,x 1 5,T 1 5,g 1 5,kb 1 5
I.41.16;h/(2*pi)*omega**3/(pi**2*c**2*(exp((h/(2*pi))*omega/(kb*T))-1));omega 1 5,T 1 5,h 1 5,kb 1 5,c 1 5
I.43.16;mu_drift*q*Volt/d;mu_drift 1 5,q 1 5,Volt 1 5,d 1 5
I.43.31;mob*kb*T;mob 1 5,T 1 5,kb 1 5
I.43.43;1/(gamma-1)*kb*v/A;gamma 2 5,kb 1 5,A 1 5,v 1 5
I.44.4;n*kb*T*ln(V2/V1);n 1 5,kb 1 5,T 1 5,V1 1 5,V2 1 5
I.47.23;sqrt(gamma*pr/rho);gamma 1 5,pr 1 5,rho 1 5
I.48.2;m*c**2/sqrt(1-v**2/c**2);m 1 5,v 1 2,c 3 10
I.50.26;x1*(cos(omega*t)+alpha*cos(omega*t)**2);x1 1 3,omega 1 3,t 1 3,alpha 1 3
II.2.42;kappa*(T2-T1)*A/d;kappa 1 5,T1 1 5,T2 1 5,A 1 5,d 1 5
II.3.24;Pwr/(4*pi*r**2);Pwr 1 5,r 1 5
II.4.23;q/(4*pi*epsilon*r);q 1 5,epsilon 1 5,r 1 5
II.6.11;1/(4*pi*epsilon)*p_d*cos(theta)/r**2;epsilon 1 3,p_d 1 3,theta 1 3,r 1 3
II.6.15a;p_d/(4*pi*epsilon)*3*z/r**5*sqrt(x**2+y**2);epsilon 1 3,p_d 1 3,r 1 3,x 1 3,y 1 3,z 1 3
II.6.15b;p_d/(4*pi*epsilon)*3*cos(theta)*sin(theta)/r**3;epsilon 1 3,p_d 1 3,theta 1 3,r 1 3
II.8.7;3/5*q**2/(4*pi*epsilon*d);q 1 5,epsilon 1 5,d 1 5
II.8.31;epsilon*Ef**2/2;epsilon 1 5,Ef 1 5
II.10.9;sigma_den/epsilon*1/(1+chi);sigma_den 1 5,epsilon 1 5,chi 1 5
II.11.3;q*Ef/(m*(omega_0**2-omega**2));q 1 3,Ef 1 3,m 1 3,omega_0 3 5,omega 1 2
II.11.17;n_0*(1+p_d*Ef*cos(theta)/(kb*T));n_0 1 3,kb 1 3,T 1 3,theta 1 3,p_d 1 3,Ef 1 3
II.11.20;n_rho*p_d**2*Ef/(3*kb*T);n_rho 1 5,p_d 1 5,Ef 1 5,kb 1 5,T 1 5
II.11.27;n*alpha/(1-(n*alpha/3))*epsilon*Ef;n 0 1,alpha 0 1,epsilon 1 2,Ef 1 2
II.11.28;1+n*alpha/(1-(n*alpha/3));n 0 1,alpha 0 1
II.13.17;1/(4*pi*epsilon*c**2)*2*I/r;epsilon 1 5,c 1 5,I 1 5,r 1 5
II.13.23;rho_c_0/sqrt(1-v**2/c**2);rho_c_0 1 5,v 1 2,c 3 10
II.13.34;rho_c_0*v/sqrt(1-v**2/c**2);rho_c_0 1 5,v 1 2,c 3 10
II.15.4;-mom*B*cos(theta);mom 1 5,B 1 5,theta 1 5
II.15.5;-p_d*Ef*cos(theta);p_d 1 5,Ef 1 5,theta 1 5
II.21.32;q/(4*pi*epsilon*r*(1-v/c));q 1 5,epsilon 1 5,r 1 5,v 1 2,c 3 10
II.24.17;sqrt(omega**2/c**2-pi**2/d**2);omega 4 6,c 1 2,d 2 4
II.27.16;epsilon*c*Ef**2;epsilon 1 5,c 1 5,Ef 1 5
II.27.18;epsilon*Ef**2;epsilon 1 5,Ef 1 5
II.34.2a;q*v/(2*pi*r);q 1 5,v 1 5,r 1 5
II.34.2;q*v*r/2;q 1 5,v 1 5,r 1 5
II.34.11;g_*q*B/(2*m);g_ 1 5,q 1 5,B 1 5,m 1 5
II.34.29a;q*h/(4*pi*m);q 1 5,h 1 5,m 1 5
II.34.29b;g_*mom*B*Jz/(h/(2*pi));g_ 1 5,h 1 5,Jz 1 5,mom 1 5,B 1 5
II.35.18;n_0/(exp(mom*B/(kb*T))+exp(-mom*B/(kb*T)));n_0 1 3,kb 1 3,T 1 3,mom 1 3,B 1 3
II.35.21;n_rho*mom*tanh(mom*B/(kb*T));n_rho 1 5,mom 1 5,B 1 5,kb 1 5,T 1 5
II.36.38;mom*H/(kb*T)+(mom*alpha)/(epsilon*c**2*kb*T)*M;mom 1 3,H 1 3,kb 1 3,T 1 3,alpha 1 3,epsilon 1 3,c 1 3,M 1 3
II.37.1;mom*(1+chi)*B;mom 1 5,B 1 5,chi 1 5
II.38.3;Y*A*x/d;Y 1 5,A 1 5,d 1 5,x 1 5
II.38.14;Y/(2*(1+sigma));Y 1 5,sigma 1 5
III.4.32;1/(exp((h/(2*pi))*omega/(kb*T))-1);h 1 5,omega 1 5,kb 1 5,T 1 5
III.4.33;(h/(2*pi))*omega/(exp((h/(2*pi))*omega/(kb*T))-1);h 1 5,omega 1 5,kb 1 5,T 1 5
III.7.38;2*mom*B/(h/(2*pi));mom 1 5,B 1 5,h 1 5
III.8.54;sin(E_n*t/(h/(2*pi)))**2;E_n 1 2,t 1 2,h 1 4
III.9.52;(p_d*Ef*t/(h/(2*pi)))*sin((omega-omega_0)*t/2)**2/((omega-omega_0)*t/2)**2;p_d 1 3,Ef 1 3,t 1 3,h 1 3,omega 1 5,omega_0 1 5
III.10.19;mom*sqrt(Bx**2+By**2+Bz**2);mom 1 5,Bx 1 5,By 1 5,Bz 1 5
III.12.43;n*(h/(2*pi));n 1 5,h 1 5
III.13.18;2*E_n*d**2*k/(h/(2*pi));E_n 1 5,d 1 5,k 1 5,h 1 5
III.14.14;I_0*(exp(q*Volt/(kb*T))-1);I_0 1 5,q 1 2,Volt 1 2,kb 1 2,T 1 2
III.15.12;2*U*(1-cos(k*d));U 1 5,k 1 5,d 1 5
III.15.14;(h/(2*pi))**2/(2*E_n*d**2);h 1 5,E_n 1 5,d 1 5
III.15.27;2*pi*alpha/(n*d);alpha 1 5,n 1 5,d 1 5
III.17.37;beta*(1+alpha*cos(theta));beta 1 5,alpha 1 5,theta 1 5
III.19.51;-m*q**4/(2*(4*pi*epsilon)**2*(h/(2*pi))**2)*(1/n**2);m 1 5,q 1 5,h 1 5,n 1 5,epsilon 1 5
III.21.20;-rho_c_0*q*A_vec/m;rho_c_0 1 5,q 1 5,A_vec 1 5,m 1 5
"""
